package flowcontrol

import (
	"math"
	"sort"

	"github.com/hacp/hacp/pkg/apiserver/request"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// config is one digest of the FlowSchemas and PriorityLevelConfigurations, as upstream's
// config controller makes it: the schemas whose priority level exists, in matching order
// (matchingPrecedence, then name), and the priority levels; the mandatory exempt and
// catch-all ones are supplied when their objects are missing.
type config struct {
	schemas []*flowcontrolv1.FlowSchema
	levels  map[string]*flowcontrolv1.PriorityLevelConfiguration
	// dangling are the names of the schemas whose priority level does not exist.
	dangling []string
}

// digest makes the config of the objects given.
func digest(pls []*flowcontrolv1.PriorityLevelConfiguration, fss []*flowcontrolv1.FlowSchema) *config {
	c := &config{levels: map[string]*flowcontrolv1.PriorityLevelConfiguration{}}
	for _, pl := range pls {
		if wellFormed(pl) {
			c.levels[pl.Name] = pl
		}
	}
	haveExempt, haveCatchAll := false, false
	for _, fs := range fss {
		if c.levels[fs.Spec.PriorityLevelConfiguration.Name] == nil {
			c.dangling = append(c.dangling, fs.Name) // ignored, as upstream
			continue
		}
		c.schemas = append(c.schemas, fs)
		haveExempt = haveExempt || fs.Name == flowcontrolv1.FlowSchemaNameExempt
		haveCatchAll = haveCatchAll || fs.Name == flowcontrolv1.FlowSchemaNameCatchAll
	}
	sort.Slice(c.schemas, func(i, j int) bool {
		a, b := c.schemas[i], c.schemas[j]
		if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
			return a.Spec.MatchingPrecedence < b.Spec.MatchingPrecedence
		}
		return a.Name < b.Name
	})
	// The mandatory levels missing are imagined, as upstream (after the schemas: one
	// naming a missing mandatory level is dangling all the same).
	for _, proto := range bootstrap.MandatoryPriorityLevelConfigurations {
		if c.levels[proto.Name] == nil {
			c.levels[proto.Name] = proto
		}
	}
	if !haveExempt {
		c.schemas = append([]*flowcontrolv1.FlowSchema{bootstrap.MandatoryFlowSchemaExempt}, c.schemas...)
	}
	if !haveCatchAll {
		c.schemas = append(c.schemas, bootstrap.MandatoryFlowSchemaCatchAll)
	}
	return c
}

// wellFormed reports a priority level whose spec this package can use: its type's union
// member is set, only the level named exempt is exempt, and a queuing level has queues.
func wellFormed(pl *flowcontrolv1.PriorityLevelConfiguration) bool {
	s := pl.Spec
	if (s.Type == flowcontrolv1.PriorityLevelEnablementLimited) != (s.Limited != nil) ||
		(s.Type == flowcontrolv1.PriorityLevelEnablementExempt) != (s.Exempt != nil) ||
		(s.Type == flowcontrolv1.PriorityLevelEnablementExempt) != (pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) {
		return false
	}
	if s.Limited == nil {
		return true
	}
	q := s.Limited.LimitResponse.Queuing
	if (s.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue) != (q != nil) {
		return false
	}
	return q == nil || q.Queues > 0 && q.HandSize > 0 && q.HandSize <= q.Queues && q.QueueLengthLimit > 0
}

// classify picks the first schema matching the request (the catch-all one when none
// does, which only a user in neither system:authenticated nor system:unauthenticated can
// cause) and its priority level.
func (c *config) classify(u *request.User, info *request.Info) (*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration) {
	var catchAll *flowcontrolv1.FlowSchema
	for _, fs := range c.schemas {
		if matches(fs, u, info) {
			return fs, c.levels[fs.Spec.PriorityLevelConfiguration.Name]
		}
		if fs.Name == flowcontrolv1.FlowSchemaNameCatchAll {
			catchAll = fs
		}
	}
	if catchAll == nil {
		catchAll = bootstrap.MandatoryFlowSchemaCatchAll
	}
	return catchAll, c.levels[catchAll.Spec.PriorityLevelConfiguration.Name]
}

// limits are a priority level's seats, out of the server's total: nominal (its share of
// the total by nominalConcurrencyShares), min (nominal less what it may lend) and max
// (nominal plus what it may borrow), as upstream computes them.
type limits struct {
	nominal, min, max int
}

// allocate divides total seats among the levels by their shares.
func allocate(total int, levels map[string]*flowcontrolv1.PriorityLevelConfiguration) map[string]limits {
	sum := 0.0
	for _, pl := range levels {
		shares, _, _ := commons(pl)
		sum += float64(shares)
	}
	out := make(map[string]limits, len(levels))
	for name, pl := range levels {
		shares, lendable, borrowing := commons(pl)
		nominal := 0
		if sum > 0 {
			nominal = int(math.Ceil(float64(total) * float64(shares) / sum))
		}
		lend := int(math.Round(float64(nominal) * float64(lendable) / 100))
		borrow := total
		if borrowing != nil {
			borrow = int(math.Round(float64(nominal) * float64(*borrowing) / 100))
		}
		out[name] = limits{nominal: nominal, min: nominal - lend, max: nominal + borrow}
	}
	return out
}

// commons returns a level's nominalConcurrencyShares, lendablePercent and
// borrowingLimitPercent (nil: no limit), zero where unset.
func commons(pl *flowcontrolv1.PriorityLevelConfiguration) (shares, lendable int32, borrowing *int32) {
	if l := pl.Spec.Limited; l != nil {
		return deref(l.NominalConcurrencyShares), deref(l.LendablePercent), l.BorrowingLimitPercent
	}
	if e := pl.Spec.Exempt; e != nil {
		return deref(e.NominalConcurrencyShares), deref(e.LendablePercent), nil
	}
	return 0, 0, nil
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

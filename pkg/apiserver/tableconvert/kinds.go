package tableconvert

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated upstream but still served (the issue asks for it)

// The printers below port kube-apiserver's pkg/printers/internalversion for
// the kinds hacp serves, with all priority-1 (wide) columns filled: the
// server always sends them and kubectl hides them unless -o wide.

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func init() {
	registerCore()
	registerApps()
	register(&coordinationv1.LeaseList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		ageColumn(),
	}, func(l *coordinationv1.Lease, now time.Time) ([]any, []metav1.TableRowCondition) {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []any{l.Name, holder, age(l.CreationTimestamp, now)}, nil
	})
}

func registerCore() {
	register(&corev1.NamespaceList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", "The status of the namespace"),
		ageColumn(),
	}, func(ns *corev1.Namespace, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}, nil
	})

	podSpecDocs, podStatusDocs := corev1.PodSpec{}.SwaggerDoc(), corev1.PodStatus{}.SwaggerDoc()
	register(&corev1.PodList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
		col("Status", "string", "The aggregate status of the containers in this pod."),
		col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		ageColumn(),
		wide("IP", "string", podStatusDocs["podIP"]),
		wide("Node", "string", podSpecDocs["nodeName"]),
		wide("Nominated Node", "string", podStatusDocs["nominatedNodeName"]),
		wide("Readiness Gates", "string", podSpecDocs["readinessGates"]),
	}, podRow)

	nodeInfoDocs := corev1.NodeSystemInfo{}.SwaggerDoc()
	register(&corev1.NodeList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", "The status of the node"),
		col("Roles", "string", "The roles of the node"),
		ageColumn(),
		col("Version", "string", nodeInfoDocs["kubeletVersion"]),
		wide("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
		wide("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
		wide("OS-Image", "string", nodeInfoDocs["osImage"]),
		wide("Kernel-Version", "string", nodeInfoDocs["kernelVersion"]),
		wide("Container-Runtime", "string", nodeInfoDocs["containerRuntimeVersion"]),
	}, nodeRow)

	svcDocs := corev1.ServiceSpec{}.SwaggerDoc()
	register(&corev1.ServiceList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Type", "string", svcDocs["type"]),
		col("Cluster-IP", "string", svcDocs["clusterIP"]),
		col("External-IP", "string", svcDocs["externalIPs"]),
		col("Port(s)", "string", svcDocs["ports"]),
		ageColumn(),
		wide("Selector", "string", svcDocs["selector"]),
	}, serviceRow)

	register(&corev1.EndpointsList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
		ageColumn(),
	}, func(ep *corev1.Endpoints, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{ep.Name, formatEndpoints(ep), age(ep.CreationTimestamp, now)}, nil
	})

	register(&corev1.ConfigMapList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
		ageColumn(),
	}, func(cm *corev1.ConfigMap, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}, nil
	})

	register(&corev1.SecretList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
		col("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
		ageColumn(),
	}, func(s *corev1.Secret, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}, nil
	})

	// 1.37 dropped the Secrets column (token Secrets are no longer made for ServiceAccounts).
	register(&corev1.ServiceAccountList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
	}, func(sa *corev1.ServiceAccount, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{sa.Name, age(sa.CreationTimestamp, now)}, nil
	})

	register(&corev1.EventList{}, eventColumns(), eventRow)
}

// eventColumns are the columns of core/v1 events, and of events.k8s.io/v1 events, which
// print as the core events they are.
func eventColumns() []metav1.TableColumnDefinition {
	evDocs := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		col("Last Seen", "string", evDocs["lastTimestamp"]),
		col("Type", "string", evDocs["type"]),
		col("Reason", "string", evDocs["reason"]),
		col("Object", "string", evDocs["involvedObject"]),
		wide("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
		wide("Source", "string", evDocs["source"]),
		col("Message", "string", evDocs["message"]),
		wide("First Seen", "string", evDocs["firstTimestamp"]),
		wide("Count", "string", evDocs["count"]),
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMetaDocs["name"]},
	}
}

func registerApps() {
	depStatusDocs := appsv1.DeploymentStatus{}.SwaggerDoc()
	register(&appsv1.DeploymentList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Ready", "string", "Number of the pod with ready state"),
		col("Up-to-date", "string", depStatusDocs["updatedReplicas"]),
		col("Available", "string", depStatusDocs["availableReplicas"]),
		ageColumn(),
		wide("Containers", "string", "Names of each container in the template."),
		wide("Images", "string", "Images referenced by each container in the template."),
		wide("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
	}, func(d *appsv1.Deployment, now time.Time) ([]any, []metav1.TableRowCondition) {
		desired := int32(1) // the API default when spec.replicas is unset
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		names, images := containerNamesImages(d.Spec.Template.Spec.Containers)
		selector := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = s.String()
		}
		return []any{
			d.Name,
			fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired),
			int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas),
			age(d.CreationTimestamp, now),
			names, images, selector,
		}, nil
	})
}

func containerNamesImages(cs []corev1.Container) (string, string) {
	names := make([]string, 0, len(cs))
	images := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

var (
	podSuccessConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	podFailedConditions  = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
)

// podRow follows upstream's printPod: READY counts ready containers (and
// started sidecar init containers), STATUS is the most telling reason from
// init and regular container states.
func podRow(pod *corev1.Pod, now time.Time) ([]any, []metav1.TableRowCondition) {
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	var conds []metav1.TableRowCondition
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		conds = podSuccessConditions
	case corev1.PodFailed:
		conds = podFailedConditions
	}

	st := &podSummary{reason: reason, total: len(pod.Spec.Containers), sidecar: map[string]bool{}}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			st.sidecar[c.Name] = true
			st.total++
		}
	}
	initializing := st.initContainers(pod)
	if !initializing || podCondition(pod, corev1.PodInitialized) {
		st.containers(pod)
	}

	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	switch {
	case pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost":
		st.reason = "Unknown"
	case pod.DeletionTimestamp != nil && !terminal:
		st.reason = "Terminating"
	}

	restartsCell := strconv.Itoa(st.restarts)
	if st.restarts != 0 && !st.lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", st.restarts, age(metav1.NewTime(st.lastRestart), now))
	}
	return []any{
		pod.Name,
		fmt.Sprintf("%d/%d", st.ready, st.total),
		st.reason,
		restartsCell,
		age(pod.CreationTimestamp, now),
		podIP(pod),
		orNone(pod.Spec.NodeName),
		orNone(pod.Status.NominatedNodeName),
		podReadinessGates(pod),
	}, conds
}

// podSummary is what kubectl's pod printer sums up from the container statuses: the
// STATUS column's reason, READY (ready of total) and RESTARTS.
type podSummary struct {
	reason             string
	ready, total       int
	restarts           int
	lastRestart        time.Time
	sidecarRestarts    int
	lastSidecarRestart time.Time
	sidecar            map[string]bool // init containers that keep running (restartPolicy Always)
}

// laterRestart moves *last to st's last termination when that is later.
func laterRestart(last *time.Time, st corev1.ContainerStatus) {
	if t := st.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(*last) {
		*last = t.FinishedAt.Time
	}
}

// initContainers sums up the init containers' statuses up to the first one still
// initializing, whose state becomes the reason ("Init:..."); reports whether there is one.
func (s *podSummary) initContainers(pod *corev1.Pod) (initializing bool) {
	for i, st := range pod.Status.InitContainerStatuses {
		s.restarts += int(st.RestartCount)
		laterRestart(&s.lastRestart, st)
		if s.sidecar[st.Name] {
			s.sidecarRestarts += int(st.RestartCount)
			laterRestart(&s.lastSidecarRestart, st)
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			continue
		case s.sidecar[st.Name] && st.Started != nil && *st.Started:
			if st.Ready {
				s.ready++
			}
			continue
		case st.State.Terminated != nil:
			t := st.State.Terminated
			switch {
			case t.Reason != "":
				s.reason = "Init:" + t.Reason
			case t.Signal != 0:
				s.reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				s.reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			s.reason = "Init:" + st.State.Waiting.Reason
		default:
			s.reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		return true
	}
	return false
}

// containers sums up the app containers' statuses (restarts counted from the sidecars'
// on): the first container, in spec order, that waits or terminated gives the reason.
func (s *podSummary) containers(pod *corev1.Pod) {
	s.restarts, s.lastRestart = s.sidecarRestarts, s.lastSidecarRestart
	running := false
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		st := pod.Status.ContainerStatuses[i]
		s.restarts += int(st.RestartCount)
		laterRestart(&s.lastRestart, st)
		switch {
		case st.State.Waiting != nil && st.State.Waiting.Reason != "":
			s.reason = st.State.Waiting.Reason
		case st.State.Terminated != nil && st.State.Terminated.Reason != "":
			s.reason = st.State.Terminated.Reason
		case st.State.Terminated != nil && st.State.Terminated.Signal != 0:
			s.reason = fmt.Sprintf("Signal:%d", st.State.Terminated.Signal)
		case st.State.Terminated != nil:
			s.reason = fmt.Sprintf("ExitCode:%d", st.State.Terminated.ExitCode)
		case st.Ready && st.State.Running != nil:
			running = true
			s.ready++
		}
	}
	if s.reason == "Completed" && running {
		s.reason = "NotReady"
		if podCondition(pod, corev1.PodReady) {
			s.reason = "Running"
		}
	}
}

// podIP is the IP column: the first of the pod's IPs, or <none>.
func podIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		return pod.Status.PodIPs[0].IP
	}
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	return "<none>"
}

// podReadinessGates is the READINESS GATES column: true gates of all, or <none>.
func podReadinessGates(pod *corev1.Pod) string {
	n := len(pod.Spec.ReadinessGates)
	if n == 0 {
		return "<none>"
	}
	trueGates := 0
	for _, g := range pod.Spec.ReadinessGates {
		if podCondition(pod, g.ConditionType) {
			trueGates++
		}
	}
	return fmt.Sprintf("%d/%d", trueGates, n)
}

// podCondition reports whether the pod's condition t is True.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func nodeRow(n *corev1.Node, now time.Time) ([]any, []metav1.TableRowCondition) {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				status = append(status, "Ready")
			} else {
				status = append(status, "NotReady")
			}
			break
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}

	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" && !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		case k == "kubernetes.io/role" && v != "":
			if !slices.Contains(roles, v) {
				roles = append(roles, v)
			}
		}
	}
	slices.Sort(roles)
	rolesCell := "<none>"
	if len(roles) > 0 {
		rolesCell = strings.Join(roles, ",")
	}

	address := func(t corev1.NodeAddressType) string {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	info := n.Status.NodeInfo
	return []any{
		n.Name,
		strings.Join(status, ","),
		rolesCell,
		age(n.CreationTimestamp, now),
		info.KubeletVersion,
		address(corev1.NodeInternalIP),
		address(corev1.NodeExternalIP),
		unknown(info.OSImage),
		unknown(info.KernelVersion),
		unknown(info.ContainerRuntimeVersion),
	}, nil
}

func serviceRow(svc *corev1.Service, now time.Time) ([]any, []metav1.TableRowCondition) {
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	} else if svc.Spec.ClusterIP != "" {
		clusterIP = svc.Spec.ClusterIP
	}
	return []any{
		svc.Name,
		string(svc.Spec.Type),
		clusterIP,
		serviceExternalIP(svc),
		servicePorts(svc.Spec.Ports),
		age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector),
	}, nil
}

func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		if p.NodePort > 0 {
			out = append(out, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return strings.Join(out, ",")
}

// formatEndpoints lists up to three ip:port pairs and how many more exist.
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, p := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
				}
			}
		}
	}
	s := strings.Join(list, ",")
	if count > max {
		return fmt.Sprintf("%s + %d more...", s, count-max)
	}
	return s
}

func eventRow(ev *corev1.Event, now time.Time) ([]any, []metav1.TableRowCondition) {
	first := age(ev.FirstTimestamp, now)
	if ev.FirstTimestamp.IsZero() {
		first = age(metav1.Time(ev.EventTime), now)
	}
	last := age(ev.LastTimestamp, now)
	if ev.LastTimestamp.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last = age(metav1.Time(ev.Series.LastObservedTime), now)
		count = ev.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		target += "/" + ev.InvolvedObject.Name
	}
	component := cmp(ev.Source.Component, ev.ReportingController)
	source := component
	if instance := cmp(ev.Source.Host, ev.ReportingInstance); instance != "" {
		source += ", " + instance
	}
	return []any{
		last,
		ev.Type,
		ev.Reason,
		target,
		ev.InvolvedObject.FieldPath,
		source,
		strings.TrimSpace(ev.Message),
		first,
		int64(count),
		ev.Name,
	}, nil
}

// cmp returns the first non-empty string.
func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

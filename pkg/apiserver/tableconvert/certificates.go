package tableconvert

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Printer of certificates.k8s.io CSRs, as kube-apiserver 1.33's.
func init() {
	specDocs := certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()
	register(&certificatesv1.CertificateSigningRequestList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
		col("SignerName", "string", specDocs["signerName"]),
		col("Requestor", "string", specDocs["request"]),
		col("RequestedDuration", "string", specDocs["expirationSeconds"]),
		col("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
	}, func(csr *certificatesv1.CertificateSigningRequest, now time.Time) ([]any, []metav1.TableRowCondition) {
		signer := orNone(csr.Spec.SignerName)
		requested := "<none>"
		if s := csr.Spec.ExpirationSeconds; s != nil {
			requested = duration.HumanDuration(time.Duration(*s) * time.Second)
		}
		return []any{csr.Name, age(csr.CreationTimestamp, now), signer, csr.Spec.Username, requested, csrCondition(csr)}, nil
	})
}

// csrCondition is upstream's extractCSRStatus: Approved, Denied or Pending, then ",Failed"
// and ",Issued".
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	if denied {
		status = "Denied"
	} else if approved {
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}

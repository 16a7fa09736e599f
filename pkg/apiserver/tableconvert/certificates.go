package tableconvert

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Printers of certificates.k8s.io, as kube-apiserver 1.37's.
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
	register(&certificatesv1.ClusterTrustBundleList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("SignerName", "string", certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]),
	}, func(b *certificatesv1.ClusterTrustBundle, _ time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{b.Name, orNone(b.Spec.SignerName)}, nil
	})
	pcrDocs := certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()
	register(&certificatesv1.PodCertificateRequestList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("PodName", "string", pcrDocs["podName"]),
		col("ServiceAccountName", "string", pcrDocs["serviceAccountName"]),
		col("NodeName", "string", pcrDocs["nodeName"]),
		col("SignerName", "string", pcrDocs["signerName"]),
		col("State", "string", "Is the request Pending, Issued, Denied, or Failed?"),
		col("UnverifiedUserAnnotations", "string", pcrDocs["unverifiedUserAnnotations"]),
	}, func(r *certificatesv1.PodCertificateRequest, _ time.Time) ([]any, []metav1.TableRowCondition) {
		state := "Pending"
		for _, c := range r.Status.Conditions {
			switch c.Type {
			case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied,
				certificatesv1.PodCertificateRequestConditionTypeFailed:
				state = c.Type
			}
		}
		return []any{r.Name, r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state,
			labels.FormatLabels(r.Spec.UnverifiedUserAnnotations)}, nil
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

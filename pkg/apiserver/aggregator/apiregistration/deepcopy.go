package apiregistration

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyInto copies in into out.
func (in *ServiceReference) DeepCopyInto(out *ServiceReference) {
	*out = *in
	if in.Port != nil {
		p := *in.Port
		out.Port = &p
	}
}

// DeepCopyInto copies in into out.
func (in *APIServiceSpec) DeepCopyInto(out *APIServiceSpec) {
	*out = *in
	if in.Service != nil {
		out.Service = new(ServiceReference)
		in.Service.DeepCopyInto(out.Service)
	}
	if in.CABundle != nil {
		out.CABundle = append([]byte(nil), in.CABundle...)
	}
}

// DeepCopyInto copies in into out.
func (in *APIServiceStatus) DeepCopyInto(out *APIServiceStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]APIServiceCondition, len(in.Conditions))
		for i := range in.Conditions {
			out.Conditions[i] = in.Conditions[i]
			in.Conditions[i].LastTransitionTime.DeepCopyInto(&out.Conditions[i].LastTransitionTime)
		}
	}
}

// DeepCopyInto copies in into out.
func (in *APIService) DeepCopyInto(out *APIService) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of in.
func (in *APIService) DeepCopy() *APIService {
	if in == nil {
		return nil
	}
	out := new(APIService)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *APIService) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyInto copies in into out.
func (in *APIServiceList) DeepCopyInto(out *APIServiceList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]APIService, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of in.
func (in *APIServiceList) DeepCopy() *APIServiceList {
	if in == nil {
		return nil
	}
	out := new(APIServiceList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *APIServiceList) DeepCopyObject() runtime.Object { return in.DeepCopy() }

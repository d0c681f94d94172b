package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The fillings of the conformance cases besides full: "zero" leaves the object empty.
var fillings = map[string]*filling{
	"full": &full,
	// present but zero: pointers to zero values, one-element slices and maps of zero values
	"zeros": {str: "", num: 0, boolean: false, specials: map[reflect.Type]any{
		reflect.TypeOf(metav1.Time{}):          metav1.Time{},
		reflect.TypeOf(metav1.MicroTime{}):     metav1.MicroTime{},
		reflect.TypeOf(metav1.Duration{}):      metav1.Duration{},
		reflect.TypeOf(metav1.FieldsV1{}):      metav1.FieldsV1{},
		reflect.TypeOf(intstr.IntOrString{}):   intstr.IntOrString{},
		reflect.TypeOf(resource.Quantity{}):    resource.Quantity{},
		reflect.TypeOf(runtime.RawExtension{}): runtime.RawExtension{},
	}},
	// negative numbers, invalid UTF-8, string forms, years past 9999, sub-microsecond nanos
	"odd": {str: "é\xffx\xe2\x82", num: -7, boolean: true, specials: map[reflect.Type]any{
		reflect.TypeOf(metav1.Time{}):          metav1.Unix(253402300800, 999),
		reflect.TypeOf(metav1.MicroTime{}):     metav1.NewMicroTime(time.Unix(-1, 1500)),
		reflect.TypeOf(metav1.Duration{}):      metav1.Duration{Duration: -(time.Hour + 1500*time.Nanosecond)},
		reflect.TypeOf(metav1.FieldsV1{}):      metav1.FieldsV1{Raw: []byte(`{"f:spec":{".":{},"f:x":{}}}`)},
		reflect.TypeOf(intstr.IntOrString{}):   intstr.FromString("50%"),
		reflect.TypeOf(resource.Quantity{}):    resource.MustParse("-1.5Gi"),
		reflect.TypeOf(runtime.RawExtension{}): runtime.RawExtension{Raw: []byte(`[1,"a",null]`)},
	}},
}

type unmarshaler interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// Case is one conformance case: a request body and the JSON kube-apiserver's decoder makes of
// it (json.Marshal of the object the protobuf Unmarshal fills).
type Case struct {
	Body string          `json:"body"` // base64 of k8s\x00 + runtime.Unknown
	JSON json.RawMessage `json:"json"`
}

// writeConformance writes, for every served kind and filling (and the empty object), a body
// and its JSON: the test of informers/testing/protobuf.py against the Go code itself.
func writeConformance(path string) {
	cases := map[string]Case{}
	names := []string{"zero"}
	for name := range fillings {
		names = append(names, name)
	}
	sort.Strings(names)
	for apiVersion, kinds := range served {
		for kind, value := range kinds {
			for _, name := range names {
				t := reflect.TypeOf(value)
				obj := reflect.New(t)
				if f := fillings[name]; f != nil {
					fill(obj.Elem(), 0, f)
				}
				raw, err := obj.Interface().(unmarshaler).Marshal()
				if err != nil {
					fail("%s %s: Marshal: %v", kind, name, err)
				}
				decoded := reflect.New(t)
				if err := decoded.Interface().(unmarshaler).Unmarshal(raw); err != nil {
					fail("%s %s: Unmarshal: %v", kind, name, err)
				}
				decoded.Elem().FieldByName("TypeMeta").Set(reflect.ValueOf(metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}))
				text, err := json.Marshal(decoded.Interface())
				if err != nil {
					fail("%s %s: json.Marshal: %v", kind, name, err)
				}
				unknown := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw,
					ContentType: runtime.ContentTypeProtobuf}
				envelope, err := unknown.Marshal()
				if err != nil {
					fail("%s %s: Unknown.Marshal: %v", kind, name, err)
				}
				body := append([]byte("k8s\x00"), envelope...)
				cases[apiVersion+"/"+kind+"/"+name] = Case{Body: base64.StdEncoding.EncodeToString(body), JSON: text}
			}
		}
	}
	data, err := json.Marshal(cases)
	if err != nil {
		fail("%v", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		fail("%v", err)
	}
}

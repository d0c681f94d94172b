// Command api-schema writes informers/testing/api_schema.json: for every Go type reachable
// from the kinds the embedded API server serves, its fields' protobuf numbers and wire types
// (from the `protobuf:"..."` struct tags) and JSON names and options (from the `json:"..."`
// tags), so that informers/testing/protobuf.py can turn a protobuf request body into exactly
// the dict the same object's JSON would decode to.
//
// Usage: go run . [-o path]   (tools/api-schema/generate.sh runs it with the default path)
//
//	go run . -conformance path   also writes test cases: for every served kind, protobuf
//	                             request bodies and the JSON Go makes of them (the
//	                             conformance test of tests/test_testing_protobuf.py)
//
// The walk is by reflection over k8s.io/api and k8s.io/apimachinery at the versions pinned in
// go.mod. Types whose JSON form is not their struct fields (metav1.Time, MicroTime, Duration,
// FieldsV1, intstr.IntOrString, resource.Quantity, runtime.RawExtension) are written as
// special kinds; any other type with a custom JSON or text marshaller, an interface, a
// `json:",string"` option, an `omitzero` the decoder cannot evaluate, or a JSON name clash
// through inlining stops the generator, so the schema never silently misdescribes a type.
// Some hand-written protobuf tags name the wrong wire type (an int32 tagged "bytes"); the wire
// type follows the Go kind instead (a warning names each such field), and verify.go marshals a
// fully populated value of every kind through its generated Marshal and checks every field
// number and wire type of the schema against the bytes.
package main

import (
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// served lists the kinds by apiVersion: the built-ins of informers/resources.py
// (BUILTIN_RESOURCES) plus meta/v1 DeleteOptions, the body of a delete.
var served = map[string]map[string]any{
	"v1": {
		"ConfigMap":             corev1.ConfigMap{},
		"Endpoints":             corev1.Endpoints{},
		"Event":                 corev1.Event{},
		"Namespace":             corev1.Namespace{},
		"Node":                  corev1.Node{},
		"PersistentVolume":      corev1.PersistentVolume{},
		"PersistentVolumeClaim": corev1.PersistentVolumeClaim{},
		"Pod":                   corev1.Pod{},
		"Secret":                corev1.Secret{},
		"Service":               corev1.Service{},
		"ServiceAccount":        corev1.ServiceAccount{},
	},
	"apps/v1": {
		"DaemonSet":   appsv1.DaemonSet{},
		"Deployment":  appsv1.Deployment{},
		"ReplicaSet":  appsv1.ReplicaSet{},
		"StatefulSet": appsv1.StatefulSet{},
	},
	"batch/v1":               {"Job": batchv1.Job{}},
	"coordination.k8s.io/v1": {"Lease": coordinationv1.Lease{}},
	"discovery.k8s.io/v1":    {"EndpointSlice": discoveryv1.EndpointSlice{}},
	"meta.k8s.io/v1":         {"DeleteOptions": metav1.DeleteOptions{}},
}

// specials are the types with a JSON form of their own (their MarshalJSON), by kind name.
var specials = map[reflect.Type]string{
	reflect.TypeOf(metav1.Time{}):          "time",         // Timestamp{seconds=1}; RFC 3339, zero: null
	reflect.TypeOf(metav1.MicroTime{}):     "microtime",    // Timestamp{seconds=1,nanos=2}; RFC 3339 micro
	reflect.TypeOf(metav1.Duration{}):      "duration",     // {duration=1 (ns)}; Go duration string
	reflect.TypeOf(metav1.FieldsV1{}):      "fieldsv1",     // {Raw=1}; the raw JSON object
	reflect.TypeOf(intstr.IntOrString{}):   "intorstring",  // {type=1,intVal=2,strVal=3}; int or string
	reflect.TypeOf(resource.Quantity{}):    "quantity",     // {string=1}; the string
	reflect.TypeOf(runtime.RawExtension{}): "rawextension", // {raw=1}; the raw JSON
}

var (
	jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

// A type as the decoder sees it (any, to keep the file small): a kind name for scalars
// (string bool int32 int64 uint32 uint64 float32 float64 bytes) and the specials;
// {"struct": name} with name a key of Schema.Types; {"slice": elem}; {"map": value} (map keys
// are always strings).
type Type = any

// Field is one struct field. A map field's entries are messages {key=1, value=2} whose wire
// types follow from the key and value kinds.
type Field struct {
	Go        string `json:"go"`                  // the Go field name
	JSON      string `json:"json"`                // the JSON name ("" when inline)
	Number    int    `json:"number"`              // the protobuf field number
	Wire      string `json:"wire,omitempty"`      // varint, bytes, fixed32, fixed64, zigzag32, zigzag64
	Type      Type   `json:"type"`                // the field's type (through a pointer)
	Pointer   bool   `json:"pointer,omitempty"`   // a Go pointer: absent means nil
	OmitEmpty bool   `json:"omitempty,omitempty"` // json omitempty
	OmitZero  bool   `json:"omitzero,omitempty"`  // json omitzero
	Inline    bool   `json:"inline,omitempty"`    // an embedded struct: its fields join the parent's
}

// Schema is the file written.
type Schema struct {
	Source map[string]string            `json:"source"` // module -> version the types came from
	Kinds  map[string]map[string]string `json:"kinds"`  // apiVersion -> kind -> type name
	Types  map[string][]Field           `json:"types"`  // type name -> fields by protobuf number
}

type walker struct {
	types map[string][]Field
}

func typeName(t reflect.Type) string {
	pkg := t.PkgPath()
	for _, prefix := range []string{"k8s.io/api/", "k8s.io/apimachinery/pkg/apis/", "k8s.io/apimachinery/pkg/"} {
		if strings.HasPrefix(pkg, prefix) {
			pkg = pkg[len(prefix):]
			break
		}
	}
	return pkg + "." + t.Name()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "api-schema: "+format+"\n", args...)
	os.Exit(1)
}

// describe returns t's Type, walking struct types not seen yet.
func (w *walker) describe(t reflect.Type, where string) Type {
	if name, ok := specials[t]; ok {
		return name
	}
	if t.Kind() != reflect.Pointer && (t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) {
		fail("%s: %s has a custom JSON or text form; add it to specials", where, t)
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int32:
		return "int32"
	case reflect.Int64, reflect.Int:
		return "int64"
	case reflect.Uint32:
		return "uint32"
	case reflect.Uint64, reflect.Uint:
		return "uint64"
	case reflect.Float32:
		return "float32"
	case reflect.Float64:
		return "float64"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		if t.Elem().Kind() == reflect.Pointer || t.Elem().Kind() == reflect.Slice && t.Elem().Elem().Kind() != reflect.Uint8 {
			fail("%s: unsupported element type %s", where, t.Elem())
		}
		return map[string]any{"slice": w.describe(t.Elem(), where+"[]")}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			fail("%s: map key %s is not a string", where, t.Key())
		}
		if k := t.Elem().Kind(); k == reflect.Pointer || k == reflect.Map || k == reflect.Slice && t.Elem().Elem().Kind() != reflect.Uint8 {
			fail("%s: unsupported map value type %s", where, t.Elem())
		}
		if w.describe(t.Key(), where+"{key}") != "string" {
			fail("%s: map key %s is not a plain string", where, t.Key())
		}
		return map[string]any{"map": w.describe(t.Elem(), where+"{value}")}
	case reflect.Struct:
		name := typeName(t)
		if _, seen := w.types[name]; !seen {
			w.types[name] = nil // mark before recursing: types may be recursive
			w.types[name] = w.fields(t)
		}
		return map[string]any{"struct": name}
	}
	fail("%s: unsupported type %s (%s)", where, t, t.Kind())
	return nil
}

// naturalWire is the wire type of a field (or of each element of a slice) of type t.
func naturalWire(t Type) string {
	if m, ok := t.(map[string]any); ok {
		if elem, ok := m["slice"]; ok {
			return naturalWire(elem)
		}
		return "bytes"
	}
	switch t {
	case "bool", "int32", "int64", "uint32", "uint64":
		return "varint"
	case "float32":
		return "fixed32"
	case "float64":
		return "fixed64"
	}
	return "bytes"
}

// wireFits tells whether a tag's wire type encodes a value of the natural one.
func wireFits(tag, natural string) bool {
	if natural == "varint" {
		return tag != "bytes"
	}
	return tag == natural
}

// tagParts splits a struct tag value at commas: the first part and the options.
func tagParts(tag string) (string, map[string]string) {
	parts := strings.Split(tag, ",")
	opts := map[string]string{}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		opts[k] = v
	}
	return parts[0], opts
}

// wireOf reads the wire type and number from a protobuf tag ("bytes,1,opt,name=metadata").
func wireOf(tag string, where string) (string, int) {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		fail("%s: malformed protobuf tag %q", where, tag)
	}
	number, err := strconv.Atoi(parts[1])
	if err != nil || number <= 0 {
		fail("%s: malformed protobuf tag %q", where, tag)
	}
	switch parts[0] {
	case "varint", "bytes", "fixed32", "fixed64", "zigzag32", "zigzag64":
	default:
		fail("%s: unsupported wire type in %q", where, tag)
	}
	return parts[0], number
}

func (w *walker) fields(t reflect.Type) []Field {
	var fields []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		where := t.String() + "." + sf.Name
		jsonTag, hasJSON := sf.Tag.Lookup("json")
		name, opts := tagParts(jsonTag)
		if name == "-" && len(opts) == 0 {
			continue // never in JSON
		}
		if _, ok := opts["string"]; ok {
			fail("%s: json \",string\" is not supported", where)
		}
		ft := sf.Type
		pointer := ft.Kind() == reflect.Pointer
		if pointer {
			ft = ft.Elem()
		}
		f := Field{Go: sf.Name, Pointer: pointer}
		_, f.OmitEmpty = opts["omitempty"]
		_, f.OmitZero = opts["omitzero"]
		// encoding/json inlines an anonymous struct field without a name in its tag.
		f.Inline = sf.Anonymous && name == "" && ft.Kind() == reflect.Struct
		if !f.Inline {
			f.JSON = name
			if !hasJSON || name == "" {
				f.JSON = sf.Name
			}
		}
		if protoTag, ok := sf.Tag.Lookup("protobuf"); ok {
			f.Wire, f.Number = wireOf(protoTag, where)
			if ft.Kind() == reflect.Map && (sf.Tag.Get("protobuf_key") != "" || sf.Tag.Get("protobuf_val") != "") {
				fail("%s: protobuf_key/protobuf_val tags are not supported", where) // entries: key=1, value=2
			}
		} else if !f.Inline || ft != reflect.TypeOf(metav1.TypeMeta{}) {
			fail("%s: no protobuf tag", where) // only the inline TypeMeta lives outside the message
		}
		if f.Number == 0 {
			continue // the inline TypeMeta: apiVersion and kind come from runtime.Unknown
		}
		f.Type = w.describe(ft, where)
		// A few hand-written tags name the wrong wire type (core/v1 ServiceSpec's
		// healthCheckNodePort says "bytes"; the generated code reads a varint): the wire
		// type follows the Go kind, as go-to-protobuf's generated.proto does, and verify
		// checks it against the generated Marshal.
		if natural := naturalWire(f.Type); natural != "" && !wireFits(f.Wire, natural) {
			fmt.Fprintf(os.Stderr, "api-schema: %s: tag says %s, the Go kind means %s: using %s\n",
				where, f.Wire, natural, natural)
			f.Wire = natural
		}
		if f.OmitZero && !pointer {
			switch f.Type {
			case "time", "microtime", "string", "bool", "int32", "int64", "uint32", "uint64", "float32", "float64":
			default:
				fail("%s: omitzero on %v is not supported by the decoder", where, f.Type)
			}
		}
		fields = append(fields, f)
	}
	sort.Slice(fields, func(a, b int) bool { return fields[a].Number < fields[b].Number })
	for i := 1; i < len(fields); i++ {
		if fields[i].Number == fields[i-1].Number {
			fail("%s: protobuf field number %d used twice", t, fields[i].Number)
		}
	}
	return fields
}

// checkNames fails when inlining makes two fields of a type share a JSON name (encoding/json
// would then apply its depth rules, which the decoder does not).
func (w *walker) checkNames(name string, seen map[string]string, path string) {
	for _, f := range w.types[name] {
		if f.Inline {
			w.checkNames(f.Type.(map[string]any)["struct"].(string), seen, path+f.Go+".")
			continue
		}
		if other, ok := seen[f.JSON]; ok {
			fail("%s: JSON name %q of %s%s clashes with %s", name, f.JSON, path, f.Go, other)
		}
		seen[f.JSON] = path + f.Go
	}
}

func moduleVersions() map[string]string {
	versions := map[string]string{}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return versions
	}
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/api" || dep.Path == "k8s.io/apimachinery" {
			versions[dep.Path] = dep.Version
		}
	}
	return versions
}

func main() {
	out := flag.String("o", "../../informers/testing/api_schema.json", "output path")
	conformance := flag.String("conformance", "", "also write conformance cases (bodies and "+
		"their JSON, for tests/test_testing_protobuf.py) to this path")
	flag.Parse()
	w := &walker{types: map[string][]Field{}}
	schema := Schema{Source: moduleVersions(), Kinds: map[string]map[string]string{}, Types: w.types}
	for apiVersion, kinds := range served {
		schema.Kinds[apiVersion] = map[string]string{}
		for kind, value := range kinds {
			t := reflect.TypeOf(value)
			schema.Kinds[apiVersion][kind] = w.describe(t, kind).(map[string]any)["struct"].(string)
		}
	}
	for name := range w.types {
		w.checkNames(name, map[string]string{}, "")
	}
	for _, kinds := range served {
		for _, value := range kinds {
			verify(w.types, reflect.TypeOf(value))
		}
	}
	if *conformance != "" {
		writeConformance(*conformance)
	}
	// Compact, keys sorted at every level: encoding/json sorts map keys but writes struct
	// fields in declaration order, so the structs go through a generic value first.
	data, err := json.Marshal(schema)
	if err != nil {
		fail("%v", err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		fail("%v", err)
	}
	if data, err = json.Marshal(generic); err != nil {
		fail("%v", err)
	}
	data = append(data, '\n')
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fail("%v", err)
	}
	count := 0
	for _, kinds := range served {
		count += len(kinds)
	}
	fmt.Fprintf(os.Stderr, "api-schema: wrote %s: %d kinds, %d types, %d bytes\n",
		*out, count, len(w.types), len(data))
}

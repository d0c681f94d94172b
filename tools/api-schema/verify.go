package main

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// verify marshals a value of every struct type reachable from root with every field set
// (strings "x", numbers 1, true, one slice element, one map entry) through the type's
// generated Marshal, and checks that the bytes hold exactly the schema's field numbers with
// its wire types, recursively. Struct tags are hand-maintained; the generated code is what
// clients send.
func verify(types map[string][]Field, root reflect.Type) {
	v := reflect.New(root).Elem()
	fill(v, 0, &full)
	marshaler, ok := v.Addr().Interface().(interface{ Marshal() ([]byte, error) })
	if !ok {
		fail("%s has no generated Marshal", root)
	}
	data, err := marshaler.Marshal()
	if err != nil {
		fail("%s: Marshal: %v", root, err)
	}
	checkMessage(types, typeName(root), data, root.String())
}

// A filling: the value every field of a kind gets.
type filling struct {
	str      string
	num      int64
	boolean  bool
	specials map[reflect.Type]any
}

// full sets every field: what verify needs (every field on the wire).
var full = filling{str: "x", num: 1, boolean: true, specials: map[reflect.Type]any{
	reflect.TypeOf(metav1.Time{}):          metav1.Unix(1, 0),
	reflect.TypeOf(metav1.MicroTime{}):     metav1.NewMicroTime(time.Unix(1, 1000)),
	reflect.TypeOf(metav1.Duration{}):      metav1.Duration{Duration: time.Second},
	reflect.TypeOf(metav1.FieldsV1{}):      metav1.FieldsV1{Raw: []byte(`{"f:a":{}}`)},
	reflect.TypeOf(intstr.IntOrString{}):   intstr.FromInt32(1),
	reflect.TypeOf(resource.Quantity{}):    resource.MustParse("1"),
	reflect.TypeOf(runtime.RawExtension{}): runtime.RawExtension{Raw: []byte(`{"a":1}`)},
}}

// fill sets every field of v: scalars to f's values, pointers to new values, slices to one
// element and maps to one entry (types nest at most a dozen deep).
func fill(v reflect.Value, depth int, f *filling) {
	if depth > 30 {
		fail("%s: types nest too deeply", v.Type())
	}
	if special, ok := f.specials[v.Type()]; ok {
		v.Set(reflect.ValueOf(special))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str)
	case reflect.Bool:
		v.SetBool(f.boolean)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(f.num)
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.num))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.num))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1, f)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1, f)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		key := reflect.New(v.Type().Key()).Elem()
		fill(key, depth+1, f)
		value := reflect.New(v.Type().Elem()).Elem()
		fill(value, depth+1, f)
		v.SetMapIndex(key, value)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1, f)
			}
		}
	}
}

var wireNumbers = map[string]uint64{"varint": 0, "zigzag32": 0, "zigzag64": 0, "fixed64": 1, "bytes": 2, "fixed32": 5}

type wireField struct {
	number uint64
	wire   uint64
	data   []byte
}

func readVarint(data []byte, pos int, where string) (uint64, int) {
	var value uint64
	for shift := uint(0); ; shift += 7 {
		if pos >= len(data) || shift >= 64 {
			fail("%s: malformed varint", where)
		}
		b := data[pos]
		pos++
		value |= uint64(b&0x7F) << shift
		if b < 0x80 {
			return value, pos
		}
	}
}

func readFields(data []byte, where string) []wireField {
	var fields []wireField
	for pos := 0; pos < len(data); {
		key, next := readVarint(data, pos, where)
		pos = next
		f := wireField{number: key >> 3, wire: key & 7}
		switch f.wire {
		case 0:
			_, pos = readVarint(data, pos, where)
		case 1:
			pos += 8
		case 5:
			pos += 4
		case 2:
			length, next := readVarint(data, pos, where)
			f.data = data[next : next+int(length)]
			pos = next + int(length)
		default:
			fail("%s: wire type %d", where, f.wire)
		}
		fields = append(fields, f)
	}
	return fields
}

func checkMessage(types map[string][]Field, name string, data []byte, where string) {
	byNumber := map[uint64]Field{}
	for _, f := range types[name] {
		byNumber[uint64(f.Number)] = f
	}
	seen := map[uint64]bool{}
	for _, wf := range readFields(data, where) {
		f, ok := byNumber[wf.number]
		if !ok {
			fail("%s: Marshal wrote field %d, which the schema of %s lacks", where, wf.number, name)
		}
		if wireNumbers[f.Wire] != wf.wire {
			fail("%s.%s: Marshal wrote wire type %d, the schema says %s", where, f.Go, wf.wire, f.Wire)
		}
		seen[wf.number] = true
		checkValue(types, f.Type, wf.data, where+"."+f.Go)
	}
	for number, f := range byNumber {
		if !seen[number] {
			fail("%s.%s: field %d is not in Marshal's output", where, f.Go, number)
		}
	}
}

func checkValue(types map[string][]Field, t Type, data []byte, where string) {
	m, ok := t.(map[string]any)
	if !ok {
		return // scalars are checked by wire type; specials have their own messages
	}
	if name, ok := m["struct"].(string); ok {
		checkMessage(types, name, data, where)
	} else if elem, ok := m["slice"]; ok {
		checkValue(types, elem, data, where+"[]")
	} else if value, ok := m["map"]; ok {
		for _, entry := range readFields(data, where) {
			wantWire := wireNumbers[naturalWire(value)]
			if entry.number == 1 && entry.wire != 2 || entry.number == 2 && entry.wire != wantWire || entry.number > 2 {
				fail("%s: map entry field %d has wire type %d", where, entry.number, entry.wire)
			}
			if entry.number == 2 {
				checkValue(types, value, entry.data, where+"{value}")
			}
		}
	} else {
		panic(fmt.Sprintf("%s: unknown type %v", where, t))
	}
}

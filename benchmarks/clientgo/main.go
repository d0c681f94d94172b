// Command bench-clientgo measures client-go's pod informer against a real kube-apiserver, the
// baseline of benchmarks/bench_real.py. It prints one JSON object on stdout.
//
// Modes:
//
//	-mode sync   a SharedInformerFactory pod informer: seconds from factory.Start to
//	             HasSynced (polled every 2 ms, as the Python children do), the resident
//	             memory before and after (after runtime.GC and debug.FreeOSMemory), and the
//	             best of 5 Lister().List calls with the label selector
//	             app.kubernetes.io/name=checkout ("list_selector", seconds).
//	-mode watch  a pod informer whose first list is pinned to -rv (resourceVersionMatch=Exact;
//	             watch-list streaming off, so the reflector lists): its watch then replays the
//	             -events MODIFIED events written after -rv as fast as it reads them. Reports
//	             "total", seconds from informer.Run to the last UpdateFunc call (each event
//	             applied to the indexer and delivered to one handler), "synced" (Run to
//	             HasSynced, polled every 2 ms), "first_to_last" (first to last UpdateFunc
//	             call), "distinct", the number of distinct resourceVersions UpdateFunc saw,
//	             and "watch", seconds from the reflector's Watch call (just before its
//	             request) to the last UpdateFunc call: the burst's time. Timing only first
//	             to last call would leave out every event decoded and queued before the
//	             first call; subtracting "synced" from "total" would leave out the part of
//	             the watch that overlaps the processing of the list. "watch_cpu" is the
//	             process's CPU seconds (user and system) over the same span.
//
// Both strip managedFields on the way in (SetTransform), as kube-informers' factory does by
// default; -keep-managed-fields turns that off. Content type: client-go's default, which for
// built-in kinds is protobuf (the generated typed clients ask for
// "application/vnd.kubernetes.protobuf,application/json": gentype.PrefersProtobuf); -json asks
// for JSON only, as the Python clients do.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			fields := strings.Fields(line)
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return rssBytes()
}

func stripManagedFields(obj interface{}) (interface{}, error) {
	if accessor, ok := obj.(metav1.Object); ok {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

func emit(value map[string]interface{}) {
	out, _ := json.Marshal(value)
	fmt.Println(string(out))
}

func fail(format string, args ...interface{}) {
	emit(map[string]interface{}{"error": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

// pinnedListWatch lists pods at one resourceVersion exactly, then watches from there.
type pinnedListWatch struct {
	client     kubernetes.Interface
	rv         string
	watchStart atomic.Value // time.Time of the first Watch call
	watchCPU   atomic.Value // the process's CPU seconds (user + system) then
}

// cpuSeconds is the process's CPU time so far, user and system.
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		fail("getrusage: %v", err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

func (lw *pinnedListWatch) List(options metav1.ListOptions) (kruntime.Object, error) {
	if options.Continue == "" {
		options.ResourceVersion = lw.rv
		options.ResourceVersionMatch = metav1.ResourceVersionMatchExact
	}
	return lw.client.CoreV1().Pods("").List(context.Background(), options)
}

func (lw *pinnedListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	if lw.watchStart.CompareAndSwap(nil, time.Now()) {
		lw.watchCPU.Store(cpuSeconds())
	}
	return lw.client.CoreV1().Pods("").Watch(context.Background(), options)
}

// IsWatchListSemanticsUnSupported keeps the reflector on list+watch (client-go util/watchlist).
func (lw *pinnedListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	mode := flag.String("mode", "sync", "sync or watch")
	rv := flag.String("rv", "", "watch mode: list at this resourceVersion")
	events := flag.Int("events", 0, "watch mode: MODIFIED events to wait for")
	keepManagedFields := flag.Bool("keep-managed-fields", false, "do not strip managedFields")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	jsonOnly := flag.Bool("json", false, "ask for JSON instead of protobuf")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("kubeconfig: %v", err)
	}
	if *jsonOnly {
		// a content type set on the config keeps the typed clients' protobuf preference
		// (gentype.PrefersProtobuf, rest.Request.UseProtobufAsDefault) from applying
		config.ContentType = "application/json"
		config.AcceptContentTypes = "application/json"
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail("client: %v", err)
	}
	stop := make(chan struct{})
	deadline := time.Now().Add(*timeout)
	rss0 := settledRSS()

	switch *mode {
	case "sync":
		factory := informers.NewSharedInformerFactory(client, 0)
		informer := factory.Core().V1().Pods().Informer()
		if !*keepManagedFields {
			_ = informer.SetTransform(stripManagedFields)
		}
		_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj interface{}) {},
		})
		start := time.Now()
		factory.Start(stop)
		for !informer.HasSynced() {
			if time.Now().After(deadline) {
				fail("not synced after %v", *timeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
		synced := time.Since(start).Seconds()
		rss1 := settledRSS()
		// The lister's List with a label selector (the Python children time the same one),
		// best of 5.
		lister := factory.Core().V1().Pods().Lister()
		selector := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "checkout"})
		best := time.Duration(1 << 62)
		for i := 0; i < 5; i++ {
			t0 := time.Now()
			if _, err := lister.List(selector); err != nil {
				fail("lister: %v", err)
			}
			if d := time.Since(t0); d < best {
				best = d
			}
		}
		emit(map[string]interface{}{"synced": synced, "rss0": rss0, "rss1": rss1,
			"cached": len(informer.GetStore().ListKeys()), "list_selector": best.Seconds()})
	case "watch":
		lw := &pinnedListWatch{client: client, rv: *rv}
		informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if !*keepManagedFields {
			_ = informer.SetTransform(stripManagedFields)
		}
		var seen int64
		var first, last time.Time
		var lastCPU float64
		done := make(chan struct{})
		target := int64(*events)
		versions := make(map[string]struct{}, *events) // only the one handler goroutine writes
		_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj interface{}) {
				if pod, ok := newObj.(*corev1.Pod); ok {
					versions[pod.ResourceVersion] = struct{}{}
				}
				n := atomic.AddInt64(&seen, 1)
				if n == 1 {
					first = time.Now()
				}
				if n == target {
					last = time.Now()
					lastCPU = cpuSeconds()
					close(done)
				}
			},
		})
		start := time.Now()
		go informer.Run(stop)
		var synced time.Duration
		for !informer.HasSynced() {
			if time.Now().After(deadline) {
				fail("not synced after %v", *timeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
		synced = time.Since(start)
		select {
		case <-done:
		case <-time.After(time.Until(deadline)):
			fail("saw %d of %d MODIFIED events", atomic.LoadInt64(&seen), target)
		}
		watchStart, _ := lw.watchStart.Load().(time.Time)
		emit(map[string]interface{}{"events": target, "total": last.Sub(start).Seconds(),
			"watch": last.Sub(watchStart).Seconds(), "watch_cpu": lastCPU - lw.watchCPU.Load().(float64),
			"synced": synced.Seconds(), "first_to_last": last.Sub(first).Seconds(),
			"distinct": len(versions), "cached": len(informer.GetStore().ListKeys())})
	default:
		fail("unknown mode %q", *mode)
	}
	os.Exit(0)
}

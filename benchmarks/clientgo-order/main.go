// Command clientgo-order records the handler notifications a client-go v0.36.3 shared pod
// informer delivers, so tests/test_clientgo_order_parity.py can compare kube-informers' order
// with client-go's on the same scripted scenario against a real kube-apiserver.
//
// It runs cache.NewSharedIndexInformer (client-go's default queue: RealFIFO with atomic
// events, feature gates at their v0.36 defaults) on the pods of -namespace, resync period 0,
// through a ListWatch that the test can disconnect: each stdin line is a command, each stdout
// line a JSON object.
//
//	stdin "disconnect"  stop the current watch; further lists and watches wait
//	stdin "reconnect"   let them through; the first watch after it fails with 410 Expired
//	                    (unless a list came first), so the informer relists, as after a
//	                    disconnect that outlived the server's watch history
//	stdin EOF           exit
//	stdout {"ack":"synced"} / {"ack":"disconnected"} / {"ack":"reconnected"}
//	stdout {"n":"add","name":..,"gen":..,"initial":bool}
//	       {"n":"update","name":..,"old":..,"new":..}
//	       {"n":"delete","name":..,"gen":..,"tombstone":bool}
//
// "gen" is the pod's label "gen". The ListWatch reports IsWatchListSemanticsUnSupported, so
// the reflector lists and then watches (kube-informers' default too).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var outMu sync.Mutex

func emit(value map[string]interface{}) {
	out, _ := json.Marshal(value)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Println(string(out))
}

func fail(format string, args ...interface{}) {
	emit(map[string]interface{}{"error": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

// gatedListWatch lists and watches pods of one namespace; disconnect/reconnect gate it.
type gatedListWatch struct {
	client    kubernetes.Interface
	namespace string

	mu         sync.Mutex
	open       chan struct{} // closed while connected
	current    watch.Interface
	expireNext bool
}

func (lw *gatedListWatch) gate() {
	lw.mu.Lock()
	open := lw.open
	lw.mu.Unlock()
	<-open
}

func (lw *gatedListWatch) List(options metav1.ListOptions) (kruntime.Object, error) {
	lw.gate()
	lw.mu.Lock()
	lw.expireNext = false // this is the relist
	lw.mu.Unlock()
	return lw.client.CoreV1().Pods(lw.namespace).List(context.Background(), options)
}

func (lw *gatedListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	lw.gate()
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.expireNext {
		lw.expireNext = false
		return nil, apierrors.NewResourceExpired("relist requested by the test")
	}
	w, err := lw.client.CoreV1().Pods(lw.namespace).Watch(context.Background(), options)
	if err == nil {
		lw.current = w
	}
	return w, err
}

// IsWatchListSemanticsUnSupported keeps the reflector on list+watch (client-go util/watchlist).
func (lw *gatedListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *gatedListWatch) disconnect() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.open = make(chan struct{})
	if lw.current != nil {
		lw.current.Stop()
		lw.current = nil
	}
}

func (lw *gatedListWatch) reconnect() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.expireNext = true
	close(lw.open)
}

func gen(obj interface{}) string {
	if pod, ok := obj.(*corev1.Pod); ok {
		return pod.Labels["gen"]
	}
	return ""
}

func name(obj interface{}) string {
	if pod, ok := obj.(*corev1.Pod); ok {
		return pod.Name
	}
	return ""
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	namespace := flag.String("namespace", "", "namespace of the pods")
	timeout := flag.Duration("timeout", 5*time.Minute, "exit after this long")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail("client: %v", err)
	}
	open := make(chan struct{})
	close(open)
	lw := &gatedListWatch{client: client, namespace: *namespace, open: open}
	informer := cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{},
		cache.SharedIndexInformerOptions{ResyncPeriod: 0})
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			emit(map[string]interface{}{"n": "add", "name": name(obj), "gen": gen(obj),
				"initial": isInInitialList})
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			emit(map[string]interface{}{"n": "update", "name": name(newObj),
				"old": gen(oldObj), "new": gen(newObj)})
		},
		DeleteFunc: func(obj interface{}) {
			tombstone, isTombstone := obj.(cache.DeletedFinalStateUnknown)
			n, g := name(obj), gen(obj)
			if isTombstone {
				n, g = name(tombstone.Obj), gen(tombstone.Obj)
			}
			emit(map[string]interface{}{"n": "delete", "name": n, "gen": g,
				"tombstone": isTombstone})
		},
	})
	if err != nil {
		fail("handler: %v", err)
	}
	stop := make(chan struct{})
	go informer.Run(stop)
	go func() {
		time.Sleep(*timeout)
		fail("timed out after %v", *timeout)
	}()
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		fail("not synced")
	}
	emit(map[string]interface{}{"ack": "synced"})
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		switch command := scanner.Text(); command {
		case "disconnect":
			lw.disconnect()
			emit(map[string]interface{}{"ack": "disconnected"})
		case "reconnect":
			lw.reconnect()
			emit(map[string]interface{}{"ack": "reconnected"})
		default:
			fail("unknown command %q", command)
		}
	}
	close(stop)
}

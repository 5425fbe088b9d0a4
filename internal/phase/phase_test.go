package phase

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
)

type scope struct {
	Stop
	ran []string
}

func step(name string, res ctrl.Result, err error, done bool) Func[*scope] {
	return func(_ context.Context, s *scope) (ctrl.Result, error) {
		s.ran = append(s.ran, name)
		if done {
			return s.Done(res, err)
		}
		return res, err
	}
}

func TestRunRunsEveryPhaseUntilStopKeepingTheLowestResultAndEveryError(t *testing.T) {
	boom, bang := errors.New("boom"), errors.New("bang")
	second, minute := ctrl.Result{RequeueAfter: time.Second}, ctrl.Result{RequeueAfter: time.Minute}
	for _, c := range []struct {
		name     string
		phases   []Func[*scope]
		wantRan  []string
		wantRes  ctrl.Result
		wantErrs []error
	}{
		{"every phase passes", []Func[*scope]{
			step("a", ctrl.Result{}, nil, false), step("b", ctrl.Result{}, nil, false)},
			[]string{"a", "b"}, ctrl.Result{}, nil},
		{"a phase's Result is kept without Done", []Func[*scope]{
			step("a", minute, nil, false), step("b", ctrl.Result{}, nil, false)},
			[]string{"a", "b"}, minute, nil},
		{"the lowest non-zero RequeueAfter wins, whichever phase returns it", []Func[*scope]{
			step("a", minute, nil, false), step("b", second, nil, false), step("c", ctrl.Result{}, nil, false)},
			[]string{"a", "b", "c"}, second, nil},
		{"Done ends the reconcile with what every phase so far returned", []Func[*scope]{
			step("a", second, nil, false), step("b", minute, nil, true), step("c", ctrl.Result{}, nil, false)},
			[]string{"a", "b"}, second, nil},
		{"an error does not end the reconcile; errors are aggregated and the Result dropped", []Func[*scope]{
			step("a", ctrl.Result{}, boom, false), step("b", second, nil, false), step("c", ctrl.Result{}, bang, false)},
			[]string{"a", "b", "c"}, ctrl.Result{}, []error{boom, bang}},
		{"a phase that fails and calls Done ends the reconcile", []Func[*scope]{
			step("a", ctrl.Result{}, boom, true), step("b", ctrl.Result{}, bang, false)},
			[]string{"a"}, ctrl.Result{}, []error{boom}},
	} {
		s := &scope{}
		res, err := Run(context.Background(), s, c.phases)
		if !slices.Equal(s.ran, c.wantRan) || res != c.wantRes {
			t.Errorf("%s: ran %v, got %v; want ran %v, %v", c.name, s.ran, res, c.wantRan, c.wantRes)
		}
		if (err == nil) != (len(c.wantErrs) == 0) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.wantErrs)
		}
		for _, want := range c.wantErrs {
			if !errors.Is(err, want) {
				t.Errorf("%s: err = %v, does not hold %v", c.name, err, want)
			}
		}
		if len(c.wantErrs) > 1 {
			var agg kerrors.Aggregate
			if !errors.As(err, &agg) || len(agg.Errors()) != len(c.wantErrs) {
				t.Errorf("%s: err = %#v, want an Aggregate of %d", c.name, err, len(c.wantErrs))
			}
		}
	}
}

// A single error comes back as it is: callers still classify it.
func TestRunReturnsASingleErrorUnwrapped(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n", errors.New("stale"))
	_, err := Run(context.Background(), &scope{}, []Func[*scope]{step("a", ctrl.Result{}, conflict, false), step("b", ctrl.Result{}, nil, false)})
	if err != conflict || !apierrors.IsConflict(err) {
		t.Errorf("err = %#v, want the conflict itself", err)
	}
}

func TestLowestNonZeroResult(t *testing.T) {
	zero, requeue := ctrl.Result{}, ctrl.Result{Requeue: true}
	second, minute := ctrl.Result{RequeueAfter: time.Second}, ctrl.Result{RequeueAfter: time.Minute}
	for _, c := range []struct{ a, b, want ctrl.Result }{
		{zero, zero, zero},
		{zero, minute, minute},
		{minute, zero, minute},
		{minute, second, second},
		{second, minute, second},
		{requeue, second, requeue},
		{second, requeue, requeue},
	} {
		if got := LowestNonZeroResult(c.a, c.b); got != c.want {
			t.Errorf("LowestNonZeroResult(%+v, %+v) = %+v, want %+v", c.a, c.b, got, c.want)
		}
	}
}

package phase

import (
	"context"
	"errors"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

type scope struct {
	Stop
	ran []string
}

func step(name string, res ctrl.Result, err error, done bool) func(context.Context, *scope) (ctrl.Result, error) {
	return func(_ context.Context, s *scope) (ctrl.Result, error) {
		s.ran = append(s.ran, name)
		if done {
			return s.Done(res, err)
		}
		return res, err
	}
}

func TestRunStopsAtDoneOrErrorAndOnlyThere(t *testing.T) {
	boom := errors.New("boom")
	later := ctrl.Result{RequeueAfter: time.Second}
	for _, c := range []struct {
		name    string
		phases  []func(context.Context, *scope) (ctrl.Result, error)
		wantRan []string
		wantRes ctrl.Result
		wantErr error
	}{
		{"every phase passes", []func(context.Context, *scope) (ctrl.Result, error){
			step("a", ctrl.Result{}, nil, false), step("b", ctrl.Result{}, nil, false)}, []string{"a", "b"}, ctrl.Result{}, nil},
		{"Done ends the reconcile with its result", []func(context.Context, *scope) (ctrl.Result, error){
			step("a", later, nil, true), step("b", ctrl.Result{}, nil, false)}, []string{"a"}, later, nil},
		{"an error ends the reconcile without Done", []func(context.Context, *scope) (ctrl.Result, error){
			step("a", ctrl.Result{}, boom, false), step("b", ctrl.Result{}, nil, false)}, []string{"a"}, ctrl.Result{}, boom},
		{"a result without Done does not end it, nor become the result", []func(context.Context, *scope) (ctrl.Result, error){
			step("a", later, nil, false), step("b", ctrl.Result{}, nil, false)}, []string{"a", "b"}, ctrl.Result{}, nil},
	} {
		s := &scope{}
		res, err := Run(context.Background(), s, c.phases)
		if res != c.wantRes || !errors.Is(err, c.wantErr) || len(s.ran) != len(c.wantRan) {
			t.Errorf("%s: ran %v, got (%v, %v); want ran %v, (%v, %v)", c.name, s.ran, res, err, c.wantRan, c.wantRes, c.wantErr)
		}
	}
}

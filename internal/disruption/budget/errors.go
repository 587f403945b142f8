package budget

import "fmt"

// FieldError is a budget field or an annotation that could not be read. The
// budget (or the annotation's cap) then allows no disruption at all: not
// knowing what the user meant, stopping is the safe reading.
type FieldError struct {
	// Field is the path of the value, such as
	// "spec.disruption.budgets[1].schedule".
	Field string
	Value string
	Err   error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

func budgetField(i int, field, value string, err error) *FieldError {
	return &FieldError{Field: fmt.Sprintf("spec.disruption.budgets[%d].%s", i, field), Value: value, Err: err}
}

func annotationField(key, value string, err error) *FieldError {
	return &FieldError{Field: fmt.Sprintf("metadata.annotations[%s]", key), Value: value, Err: err}
}

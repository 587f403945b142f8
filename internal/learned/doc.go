// Package learned remembers the real capacity of instance types, as nodes
// report it when they register, and persists it in a ConfigMap so that a
// restarted controller does not forget it. The model's estimate (nominal
// memory less a VM overhead percentage) is only a guess; once one node of a
// type has registered, the solver plans with what such nodes really have.
package learned

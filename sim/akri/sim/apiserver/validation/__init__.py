"""What kube-apiserver refuses on create and update of the built-in kinds, as pure functions.

One module per API group, each rule citing the Kubernetes function it follows
(k8s.io/kubernetes pkg/apis/<group>/validation/validation.go unless said otherwise). Every
function takes the object as JSON and returns its problems as (field path, message) pairs, in
the real server's words (`field`), which `errors.invalid` turns into a 422 `Invalid` Status.
"""

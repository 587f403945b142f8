// Package livetest checks `nodewright explain` against a real
// kube-apiserver (internal/testcluster). It lives apart from package
// explain so that explain's golden tests need no API server.
package livetest

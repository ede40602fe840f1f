// Package deploy holds no code. It is the home of llmrouter's deployment
// files and of the tests that keep them true to the code:
//
//	base/                  kustomize base: the router as a native sidecar of
//	                       an example app (ConfigMap, Deployment, metrics
//	                       Service); secret.example.yaml shows the keys'
//	                       Secret and is deliberately not a resource
//	fleet/                 overlay: the same sidecars sharing provider state
//	                       through a Redis (shared_state)
//	prometheus/            pod-discovery scrape config and alert rules
//	grafana/               the dashboard
//	testdata/              promtool unit tests for the alert rules
//	../Dockerfile          the image (static binary, distroless, 65532)
//
// Invariants the tests hold:
//   - every manifest decodes strictly into the Kubernetes API types of its
//     kind, and the kustomization lists files that exist;
//   - the ConfigMap's config.yaml passes config.Load with the sidecar's
//     environment, the API listens on loopback, the admin listener on the
//     pod IP at the port the probes, the Service and the scrape config use;
//   - the pod's grace period exceeds shutdown_timeout, and every provider
//     key comes from the Secret;
//   - the sidecar's spans go to the OpenTelemetry Collector agent on its
//     node (status.hostIP, port 4318);
//   - every metric the alerts and the dashboard query is one the router
//     registers (read from a real proxy.Server and the admin gauges on
//     it), with labels it has;
//   - with promtool on PATH (required when CI=true): the rules pass
//     `promtool check rules`, behave as testdata/alert-rules.test.yaml
//     says, and the dashboard's expressions parse.
package deploy

// Package dashboard tests the Grafana dashboard shipped in docs/grafana-dashboard.json. It has
// no Go code besides the test.
//
// One file, dashboard_test.go: TestDashboardQueriesExist checks that every metric (and label)
// the dashboard's queries use is one that calico-felix, calico-confd or calico-startup registers,
// from the same collectors they register.
package dashboard

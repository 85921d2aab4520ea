// Package scripts holds the maintainer scripts of the calico-host packages (deb and rpm); its
// test runs them. It has no Go code besides the test.
//
// The files:
//
//	maint.sh             the shared actions (calico-common installs it as /usr/lib/calico-host/maint):
//	                     postinst (configuration group, daemon-reload, restart on upgrade), prerm
//	                     (stop and disable on removal), postrm, restore-perms; nothing is ever
//	                     enabled or started on install
//	preinst.sh           before an upgrade: remember the configuration files' mode and owner
//	common-postinst.sh   calico-common: the calico group may read the configuration
//	*-postinst.sh        each daemon package (confd, felix, startup): maint postinst of its units
//	*-prerm.sh           each daemon package: maint prerm of its units
//	felix-postrm.sh      purge takes felix's dataplane away (nftables tables, routes, devices,
//	                     WireGuard rules); remove leaves it in force
//	confd-postrm.sh      purge removes the BIRD configuration confd rendered
//	startup-postrm.sh    purge removes the node name file
//	postrm_test.go       TestFelixPostrmPurgeRoutes: felix-postrm.sh purge in a namespace of its own
package scripts

package topo

import (
	"context"
	"fmt"
)

// Live migration as networking-calico models it (openstack-contract.md §1.5): while the port's
// binding:profile.migrating_to names the destination host, the driver writes a LiveMigration
// named like the destination WorkloadEndpoint, then that second WorkloadEndpoint; when the
// migration completes the port is bound to the destination and the source endpoint goes.

// MigrationTarget prepares the VM's copy on dest: same instance, port, MAC and addresses, a new
// namespace (the paused instance) not plugged in yet.
func (vm *VM) MigrationTarget(ctx context.Context, dest *Host) (*VM, error) {
	t := *vm
	t.Host, t.Port = dest, vm.Port
	t.setName()
	var err error
	if t.NS, err = dest.f.newNetns(ctx, fmt.Sprintf("h%dvm%d", dest.Index, vmSeq.Add(1))); err != nil {
		return nil, err
	}
	return &t, nil
}

// WriteLiveMigration writes the LiveMigration for a migration of vm to target
// (endpoints.py:1297-1316).
func (vm *VM) WriteLiveMigration(ctx context.Context, target *VM) error {
	ident := func(v *VM) map[string]any {
		return map[string]any{"workloadEndpoint": map[string]string{"hostname": v.Host.Name, "orchestratorID": "openstack",
			"workloadID": v.Namespace + "/" + v.DeviceID, "endpointID": v.PortID}}
	}
	return vm.Host.f.writeV3(ctx, v3Object{kind: "LiveMigration", plural: "livemigrations", ns: target.Namespace,
		name: target.WEPName, spec: map[string]any{"source": ident(vm), "target": ident(target)}})
}

// DeleteLiveMigration removes the LiveMigration of a migration to target.
func (vm *VM) DeleteLiveMigration(ctx context.Context, target *VM) error {
	return vm.Host.f.deleteV3(ctx, "livemigrations", target.Namespace, target.WEPName)
}

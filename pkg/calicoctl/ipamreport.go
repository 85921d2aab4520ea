package calicoctl

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// reportMeta is what Project Calico's IPAM report records about the cluster it was written
// for, under Calico's names; `ipam release --from-report` checks it.
type reportMeta struct {
	Version             string `json:"version"`
	ClusterGUID         string `json:"clusterGUID"`
	DatastoreLocked     bool   `json:"datastoreLocked"`
	ClusterInfoRevision string `json:"clusterInformationRevision"`
}

// checkReportFile is the report `ipam check -o` writes: the metadata and the findings.
type checkReportFile struct {
	reportMeta
	*ipam.CheckReport
}

// reportMeta reads the metadata of a report from ClusterInformation "default".
func (s *session) reportMeta() (reportMeta, error) {
	ci, err := s.clusterInformation()
	if err != nil {
		return reportMeta{}, err
	}
	return reportMeta{
		Version:             buildinfo.Version,
		ClusterGUID:         ci.Spec.ClusterGUID,
		DatastoreLocked:     ci.Spec.DatastoreReady != nil && !*ci.Spec.DatastoreReady,
		ClusterInfoRevision: ci.ResourceVersion,
	}, nil
}

func (s *session) clusterInformation() (*api.ClusterInformation, error) {
	ctx, cancel := s.op()
	defer cancel()
	ci, err := datastore.GetAs[*api.ClusterInformation](ctx, s.ds, "", "default")
	if err != nil {
		return nil, fmt.Errorf("reading ClusterInformation: %w", err)
	}
	return ci, nil
}

func writeCheckReport(path string, meta reportMeta, r *ipam.CheckReport) error {
	data, err := json.MarshalIndent(checkReportFile{meta, r}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// releaseFromReports releases the addresses leaked in every report, with Project Calico's
// checks: every report is of this cluster (not overridable), at least one is current
// (ClusterInformation unchanged since), and, unless forced, the reports come from this
// version of calicoctl and the datastore is locked.
func (s *session) releaseFromReports(ic *ipam.Client, files []string, force bool) error {
	ci, err := s.clusterInformation()
	if err != nil {
		return err
	}
	var reports []checkReportFile
	current := false
	for _, f := range files {
		r, err := readCheckReport(f)
		if err != nil {
			return err
		}
		if r.ClusterGUID != ci.Spec.ClusterGUID {
			return fmt.Errorf("cluster does not match the provided report (%s): mismatched cluster GUID. Refusing to release", f)
		}
		if r.Version != buildinfo.Version {
			if !force {
				return fmt.Errorf("the provided report (%s) was produced using a different version (%s) of calicoctl. Refusing to release", f, r.Version)
			}
			fmt.Fprintln(s.stdout, "WARNING: Report was produced using a different version of calicoctl. Ignoring due to --force option")
		}
		current = current || r.ClusterInfoRevision == ci.ResourceVersion
		reports = append(reports, r)
	}
	if !current {
		return fmt.Errorf("the provided reports are all stale - at least one should be up-to-date. Please generate a new report while the data store is locked and try again")
	}
	if ci.Spec.DatastoreReady == nil || *ci.Spec.DatastoreReady {
		if !force {
			return fmt.Errorf("data store is not locked. Either lock the data store, or re-run with --force")
		}
		fmt.Fprintln(s.stdout, "WARNING: Data store is not locked. Ignoring due to --force option")
	}
	ips := leakedInAll(reports)
	if len(ips) == 0 {
		fmt.Fprintln(s.stdout, "Report didn't contain any leaked IPs to clean up.")
	} else if err := s.releaseIPs(ic, ips); err != nil {
		return err
	}
	fmt.Fprintln(s.stdout, "You may now unlock the data store.")
	return nil
}

func readCheckReport(path string) (checkReportFile, error) {
	r := checkReportFile{CheckReport: &ipam.CheckReport{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("reading report: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("parsing report %s: %w", path, err)
	}
	return r, nil
}

// leakedInAll lists the addresses leaked in every report (each in the first report's order).
func leakedInAll(reports []checkReportFile) []netip.Addr {
	count := map[netip.Addr]int{}
	for _, r := range reports {
		seen := map[netip.Addr]bool{}
		for _, l := range r.LeakedIPs {
			if !seen[l.IP] {
				seen[l.IP] = true
				count[l.IP]++
			}
		}
	}
	var out []netip.Addr
	for _, l := range reports[0].LeakedIPs {
		if count[l.IP] == len(reports) {
			out = append(out, l.IP)
			count[l.IP] = 0
		}
	}
	return out
}

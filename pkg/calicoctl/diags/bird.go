package diags

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/birdctl"
)

// birdCommands are asked of BIRD through its control socket, as birdc would.
var birdCommands = []struct{ file, cmd string }{
	{"status.txt", "show status"},
	{"protocols.txt", "show protocols all"},
	{"route-count.txt", "show route count"},
}

// collectBIRDStatus asks the first BIRD control socket that answers. No BIRD running is noted,
// not an error: it is a fact about the host.
func collectBIRDStatus(ctx context.Context, h *Host) ([]File, error) {
	var dialErrs []error
	for _, sock := range h.BIRDSockets {
		cl, err := birdctl.Dial(ctx, sock)
		if err != nil {
			dialErrs = append(dialErrs, err)
			continue
		}
		defer cl.Close()
		return birdReplies(ctx, cl, sock)
	}
	note := fmt.Sprintf("No BIRD control socket answered (%s):\n%v\n", strings.Join(h.BIRDSockets, ", "), errors.Join(dialErrs...))
	return []File{{Name: "bird/NOTE.txt", Data: []byte(note)}}, nil
}

func birdReplies(ctx context.Context, cl *birdctl.Client, sock string) ([]File, error) {
	files := []File{{Name: "bird/socket.txt", Data: fmt.Appendf(nil, "%s\n%s\n", sock, cl.Version)}}
	var errs []error
	for _, c := range birdCommands {
		lines, err := cl.Command(ctx, c.cmd)
		var b strings.Builder
		fmt.Fprintf(&b, "# birdc -s %s %s\n", sock, c.cmd)
		for _, l := range lines {
			b.WriteString(l.Text + "\n")
		}
		if err != nil {
			fmt.Fprintf(&b, "\n# failed: %v\n", err)
			errs = append(errs, fmt.Errorf("BIRD %q: %w", c.cmd, err))
		}
		files = append(files, File{Name: "bird/" + c.file, Data: []byte(b.String())})
		if ctx.Err() != nil {
			break
		}
	}
	return files, joinErrs(errs)
}

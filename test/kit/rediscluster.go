package kit

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterNodeTimeout is the cluster-node-timeout of the kit's clusters: a
// master that stops answering for this long is marked failed and its
// replica promoted (about 2 to 3 s after a SIGKILL, all told).
const ClusterNodeTimeout = time.Second

// RedisCluster is a real local Redis Cluster: six redis-server processes in
// cluster mode (3 masters with one replica each) on loopback ports, in a
// temporary directory, killed when the test ends.
type RedisCluster struct {
	Nodes []*RedisProc
	cli   string
}

// StartRedisCluster starts the six servers, creates the cluster with
// `redis-cli --cluster create --cluster-replicas 1` and waits until every
// node reports cluster_state:ok, agrees on the slot map and every master has
// its replica in sync. It skips the test (with the reason) only when
// redis-server or redis-cli is not installed.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	RedisServerBinary(t)
	c := &RedisCluster{cli: RedisCLIBinary(t)}
	dir := t.TempDir()
	for i := 0; i < 6; i++ {
		bus := func(int) []string {
			_, p, _ := net.SplitHostPort(FreeAddr(t))
			return []string{"--cluster-port", p}
		}
		c.Nodes = append(c.Nodes, startRedisProc(t, dir, fmt.Sprintf("node%d", i), bus, "",
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(ClusterNodeTimeout/time.Millisecond)),
			"--cluster-replica-validity-factor", "0",
		))
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := exec.Command(c.cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kit: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK(t, 30*time.Second)
	waitFor(t, 30*time.Second, "replicas in sync", func() string {
		for _, n := range c.live() {
			info, err := n.info("replication")
			if err != nil {
				return err.Error()
			}
			switch infoField(info, "role") {
			case "master":
				if infoField(info, "connected_slaves") != "1" {
					return n.Addr + " has no replica yet"
				}
			case "slave":
				if infoField(info, "master_link_status") != "up" || infoField(info, "master_sync_in_progress") != "0" {
					return n.Addr + " not in sync"
				}
			}
		}
		return ""
	})
	return c
}

// Addrs are the addresses of the live nodes: seeds for a cluster client.
func (c *RedisCluster) Addrs() []string {
	var out []string
	for _, n := range c.live() {
		out = append(out, n.Addr)
	}
	return out
}

func (c *RedisCluster) live() []*RedisProc {
	var out []*RedisProc
	for _, n := range c.Nodes {
		if !n.Dead() {
			out = append(out, n)
		}
	}
	return out
}

func (c *RedisCluster) node(addr string) *RedisProc {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// info runs INFO section (or CLUSTER INFO for "cluster") on one server.
func (p *RedisProc) info(section string) (string, error) {
	cl := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if section == "cluster" {
		return cl.ClusterInfo(ctx).Result()
	}
	return cl.Info(ctx, section).Result()
}

// do runs one command on one server.
func (p *RedisProc) do(args ...any) (any, error) {
	cl := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Do(ctx, args...).Result()
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string
	flags            []string
	slots            []string
}

func (n clusterNode) is(flag string) bool { return slices.Contains(n.flags, flag) }

// nodesView is one server's CLUSTER NODES, parsed.
func (p *RedisProc) nodesView() ([]clusterNode, error) {
	raw, err := p.do("CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	text, _ := raw.(string)
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		out = append(out, clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3], slots: f[8:]})
	}
	return out, nil
}

// slotMap renders a view's masters and slots, for comparing views.
func slotMap(view []clusterNode) string {
	var parts []string
	for _, n := range view {
		if n.is("master") && len(n.slots) > 0 {
			parts = append(parts, n.addr+"="+strings.Join(n.slots, ","))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// WaitOK waits until every live node reports cluster_state:ok and all agree
// on a slot map whose masters are all alive, and returns the moment it
// saw that (the "cluster is ok again" of a failover test).
func (c *RedisCluster) WaitOK(t testing.TB, within time.Duration) time.Time {
	t.Helper()
	waitFor(t, within, "cluster_state:ok on every node", c.notOK)
	return time.Now()
}

// notOK says why the cluster is not healthy yet, or "" when it is.
func (c *RedisCluster) notOK() string {
	var want string
	for _, n := range c.live() {
		info, err := n.info("cluster")
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		if s := infoField(info, "cluster_state"); s != "ok" {
			return n.Addr + ": cluster_state:" + s
		}
		view, err := n.nodesView()
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		for _, v := range view {
			if v.is("master") && len(v.slots) > 0 {
				if p := c.node(v.addr); p == nil || p.Dead() {
					return n.Addr + " routes slots " + strings.Join(v.slots, ",") + " to dead " + v.addr
				}
			}
		}
		m := slotMap(view)
		if want == "" {
			want = m
		} else if m != want {
			return "views differ: " + want + " vs " + n.Addr + ": " + m
		}
	}
	return ""
}

// MasterOf is the live node that serves slot now, as the first live node
// sees it.
func (c *RedisCluster) MasterOf(t testing.TB, slot int) *RedisProc {
	t.Helper()
	for _, n := range c.live() {
		view, err := n.nodesView()
		if err != nil {
			continue
		}
		for _, v := range view {
			if v.is("master") && slotsHold(v.slots, slot) {
				if p := c.node(v.addr); p != nil {
					return p
				}
			}
		}
	}
	t.Fatalf("kit: no node serves slot %d", slot)
	return nil
}

// slotsHold reports whether CLUSTER NODES slot fields ("0-5460", "7",
// "[7->-id]") hold slot.
func slotsHold(fields []string, slot int) bool {
	for _, f := range fields {
		if strings.HasPrefix(f, "[") {
			continue // a migration in progress, not ownership
		}
		lo, hi, ok := strings.Cut(f, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// KillMasterOf SIGKILLs the master serving slot, once its replica has
// every write it acknowledged (WaitReplicated), and returns it.
func (c *RedisCluster) KillMasterOf(t testing.TB, slot int) *RedisProc {
	t.Helper()
	m := c.MasterOf(t, slot)
	m.WaitReplicated(t)
	m.Kill()
	return m
}

// WaitReplicated waits (WAIT 1, up to 10 s) until a replica of p, a master,
// has every write p acknowledged so far. Redis replicates asynchronously:
// a master killed with writes its replica has not received loses them at
// the failover, and on a loaded machine the replica can be whole seconds
// behind. A failover test that counts acknowledged writes kills the master
// only after this, with its writers paused.
func (p *RedisProc) WaitReplicated(t testing.TB) {
	t.Helper()
	n, err := p.do("WAIT", 1, 10000)
	if err != nil || n != int64(1) {
		t.Fatalf("kit: WAIT on %s: %v replicas, %v", p.Addr, n, err)
	}
}

// WaitPromotion waits until the killed master's replica has taken over its
// slots and the cluster is ok (WaitOK), returning the new master of slot and
// the moment the cluster was seen ok.
func (c *RedisCluster) WaitPromotion(t testing.TB, killed *RedisProc, slot int, within time.Duration) (*RedisProc, time.Time) {
	t.Helper()
	okAt := c.WaitOK(t, within)
	m := c.MasterOf(t, slot)
	if m == killed {
		t.Fatalf("kit: slot %d still served by the killed %s", slot, killed.Addr)
	}
	return m, okAt
}

// nodeID is the server's cluster node id.
func (p *RedisProc) nodeID(t testing.TB) string {
	t.Helper()
	id, err := p.do("CLUSTER", "MYID")
	if err != nil {
		t.Fatalf("kit: CLUSTER MYID on %s: %v", p.Addr, err)
	}
	return id.(string)
}

// OtherMaster is a live master other than the one serving slot (a target
// for MigrateSlot).
func (c *RedisCluster) OtherMaster(t testing.TB, slot int) *RedisProc {
	t.Helper()
	from := c.MasterOf(t, slot)
	for _, n := range c.live() {
		if n == from {
			continue
		}
		if info, err := n.info("replication"); err == nil && infoField(info, "role") == "master" {
			return n
		}
	}
	t.Fatalf("kit: no other master")
	return nil
}

// MigrateSlot moves slot to the master to, as `redis-cli --cluster reshard`
// does: it marks the slot IMPORTING on to and MIGRATING on its owner, calls
// mid (the slot is half-moved: commands on its keys get ASK redirections,
// and keys already moved live on to), moves the keys with MIGRATE, then
// assigns the slot to to on every node (MOVED from then on) and waits for
// the cluster to agree.
func (c *RedisCluster) MigrateSlot(t testing.TB, slot int, to *RedisProc, mid func()) {
	t.Helper()
	from := c.MasterOf(t, slot)
	if from == to {
		t.Fatalf("kit: slot %d already on %s", slot, to.Addr)
	}
	fromID, toID := from.nodeID(t), to.nodeID(t)
	must := func(p *RedisProc, args ...any) any {
		t.Helper()
		v, err := p.do(args...)
		if err != nil {
			t.Fatalf("kit: %v on %s: %v", args, p.Addr, err)
		}
		return v
	}
	must(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID)
	must(from, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID)
	if mid != nil {
		mid()
	}
	host, port, _ := net.SplitHostPort(to.Addr)
	for {
		keys, _ := must(from, "CLUSTER", "GETKEYSINSLOT", slot, 100).([]any)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		args = append(args, keys...)
		must(from, args...)
	}
	must(to, "CLUSTER", "SETSLOT", slot, "NODE", toID)
	must(from, "CLUSTER", "SETSLOT", slot, "NODE", toID)
	for _, n := range c.live() {
		if n != to && n != from {
			if info, err := n.info("replication"); err == nil && infoField(info, "role") == "master" {
				must(n, "CLUSTER", "SETSLOT", slot, "NODE", toID)
			}
		}
	}
	waitFor(t, 10*time.Second, fmt.Sprintf("slot %d on %s everywhere", slot, to.Addr), func() string {
		if why := c.notOK(); why != "" {
			return why
		}
		if m := c.MasterOf(t, slot); m != to {
			return "served by " + m.Addr
		}
		return ""
	})
}

// KeySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its hash tag (the text between the first '{' and the next '}',
// when not empty), modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

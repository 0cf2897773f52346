package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.MergedRegions;
import io.kvraft.client.admin.NodeState;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * {@code node list|drain|undrain|remove}: the cluster's nodes as the cluster map's leader sees them, and changes of a
 * node's state in the map. Placement on the servers moves the replicas; these commands only ask for it and watch.
 */
final class NodeCommands {

    private NodeCommands() {
    }

    @Command(name = "node", subcommands = {ListNodes.class, Drain.class, Undrain.class, Remove.class},
            mixinStandardHelpOptions = true,
            description = "The cluster's nodes, as the cluster map's leader sees them: 'node list' shows each node's"
                    + " state, replicas, leaders and disk use; 'node drain NODE' has the servers move its replicas to"
                    + " the other nodes; 'node undrain NODE' makes it a full member again; 'node remove NODE' takes a"
                    + " drained (or dead) node out for good.")
    static final class NodeCommand implements Callable<Integer> {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "node needs a subcommand: list, drain NODE, undrain NODE or remove NODE");
        }
    }

    private static KvCtl ctl(CommandLine.Model.CommandSpec spec) {
        return (KvCtl) spec.parent().parent().userObject();
    }

    /** Fails with IllegalArgumentException (usage error) for a NODE that is not host:port. */
    private static String checked(String node) {
        io.kvraft.common.config.HostPort.parse(node);
        return node;
    }

    // ---- the commands ------------------------------------------------------------------------------

    @Command(name = "list", mixinStandardHelpOptions = true, description = {"Each node of the cluster map: its state"
            + " (up, draining, removed; down: up but silent longer than placement.downAfterMs, its replicas rebuilt"
            + " elsewhere), whether it reports (live), the region replicas it holds and the regions it"
            + " leads, its data directory's size, and its part in the map's own Raft group (leader, voter, learner).",
            "Then the cluster id, node count, replication.factor and map leader, and the replica moves in progress.",
            "Exit 0 when every node not removed is live, 1 otherwise."})
    static final class ListNodes implements Callable<Integer> {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try (KvAdmin c = ctl(spec).admin()) {
                return printList(KvClient.sync(c.cluster()), spec.commandLine().getOut());
            }
        }
    }

    @Command(name = "drain", mixinStandardHelpOptions = true, description = {"Marks NODE draining in the cluster map:"
            + " the servers move its region replicas (placement.movesAtOnce at a time) and its map voter to the other"
            + " nodes, and put no new replica on it. Then waits, printing the replicas left whenever that changes,"
            + " until NODE holds none.",
            "Refused with nothing changed when NODE is not a node of the cluster or was removed, or when draining it"
                    + " would leave fewer UP nodes than replication.factor (add a node first)."})
    static final class Drain implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "NODE", description = "host:port of the node to drain")
        String target;
        @Option(names = "--no-wait", description = "return once the node is marked draining")
        boolean noWait;
        @Option(names = "--timeout-s", defaultValue = "1800", paramLabel = "S",
                description = "give up waiting after this long, exit 1; the drain goes on (default: ${DEFAULT-VALUE})")
        long timeoutS;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            checked(target);
            if (timeoutS <= 0) {
                throw new IllegalArgumentException("--timeout-s must be positive");
            }
            PrintWriter out = spec.commandLine().getOut();
            try (KvAdmin c = ctl(spec).admin()) {
                KvClient.sync(c.nodeState(target, NodeState.DRAINING, false));
                out.println("node " + target + " is draining: its replicas move to the other nodes");
                if (noWait) {
                    return 0;
                }
                return watchDrain(target, () -> KvClient.sync(c.cluster()), TimeUnit.SECONDS.toNanos(timeoutS),
                        System::nanoTime, Thread::sleep, out, spec.commandLine().getErr());
            }
        }
    }

    @Command(name = "undrain", mixinStandardHelpOptions = true, description = "Marks NODE up again in the cluster"
            + " map: placement stops moving its replicas away and may put replicas on it again. A removed node cannot"
            + " be undrained.")
    static final class Undrain implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "NODE", description = "host:port of the node")
        String target;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            checked(target);
            try (KvAdmin c = ctl(spec).admin()) {
                ClusterInfo r = KvClient.sync(c.nodeState(target, NodeState.UP, false));
                ClusterInfo.Node rec = r.node(target);
                spec.commandLine().getOut().println("node " + target + " is "
                        + state(rec == null ? NodeState.UP : rec.state()));
                return 0;
            }
        }
    }

    @Command(name = "remove", mixinStandardHelpOptions = true, description = {"Removes NODE from the cluster for"
            + " good: it leaves the map's group, and a node started with its data directory is refused (a node with an"
            + " empty data directory may join at its address).",
            "Refused with nothing changed while NODE holds region replicas or a voter of the map (drain it first), or"
                    + " when removing it would leave fewer UP nodes than replication.factor."})
    static final class Remove implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "NODE", description = "host:port of the node")
        String target;
        @Option(names = "--force", description = "only for a node that is down: remove it though it still holds"
                + " replicas; its replicas are rebuilt on the other nodes")
        boolean force;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            checked(target);
            try (KvAdmin c = ctl(spec).admin()) {
                ClusterInfo r = KvClient.sync(c.nodeState(target, NodeState.REMOVED, force));
                spec.commandLine().getOut().println("node " + target + " removed from cluster "
                        + r.clusterId() + "; a node started with its data directory is refused");
                return 0;
            }
        }
    }

    // ---- waiting for a drain ------------------------------------------------------------------------

    /** A pause between two looks at the map; {@code Thread::sleep}, or a test's clock. */
    @FunctionalInterface
    interface Pause {
        void pause(long ms) throws InterruptedException;
    }

    static final long POLL_MS = 1000;

    /**
     * Polls the map every {@link #POLL_MS} until {@code node} is {@link #drained}, printing a line whenever its replica
     * count changes; 0 then, 1 when {@code timeoutNanos} ran out or the node is no longer draining (undrained
     * meanwhile). A poll that fails (the map's leader retried until the client's deadline: a leader change under load)
     * is asked again until the timeout.
     */
    static int watchDrain(String node, Supplier<ClusterInfo> poll, long timeoutNanos, LongSupplier clock,
                          Pause pause, PrintWriter out, PrintWriter err) {
        long start = clock.getAsLong();
        String shown = null;
        while (true) {
            ClusterInfo c;
            try {
                c = poll.get();
            } catch (io.kvraft.common.KvException e) {
                // the map's leader changed or the cluster is busy: the drain goes on on the servers; ask again
                if (clock.getAsLong() - start >= timeoutNanos) {
                    err.println("error: node " + node + ": no answer from the cluster map at the end of the wait ("
                            + e.getMessage() + "); it keeps draining: watch it with node list");
                    return 1;
                }
                out.println("node " + node + ": the cluster map did not answer (" + e.code() + "); asking again");
                try {
                    pause.pause(POLL_MS);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return 1;
                }
                continue;
            }
            int left = c.replicas(node);
            boolean voter = c.mapVoters().contains(node);
            String progress = "node " + node + ": " + left + " replicas left (moves done: " + c.movesDone() + ")"
                    + (left == 0 && voter ? "; still a voter of the cluster map" : "");
            if (!progress.equals(shown)) {
                out.println(progress);
                shown = progress;
            }
            long took = clock.getAsLong() - start;
            if (drained(c, node)) {
                out.println("node " + node + " drained: holds no replica (took " + TimeUnit.NANOSECONDS.toSeconds(took)
                        + " s); remove it for good with: node remove " + node);
                return 0;
            }
            ClusterInfo.Node rec = c.node(node);
            if (rec != null && rec.state() != NodeState.DRAINING) {
                err.println("error: node " + node + " is " + state(rec.state()) + " now, no longer draining; it holds "
                        + left + " replicas");
                return 1;
            }
            if (took >= timeoutNanos) {
                err.println("error: node " + node + " still holds " + left + " replicas"
                        + (voter ? " and a voter of the cluster map" : "") + " after "
                        + TimeUnit.NANOSECONDS.toSeconds(timeoutNanos) + " s; it keeps draining: watch it with node list");
                return 1;
            }
            try {
                pause.pause(POLL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                err.println("error: interrupted while node " + node + " drains; it keeps draining");
                return 1;
            }
        }
    }

    /**
     * Whether {@code node} holds no region replica and no voter of the map, by a view of the regions that covers the key
     * space (right after the map's leader changed it has not heard from every node yet).
     */
    static boolean drained(ClusterInfo c, String node) {
        return new MergedRegions().add(c.regions()).covers() && c.replicas(node) == 0 && !c.mapVoters().contains(node);
    }


    // ---- output ---------------------------------------------------------------------------------------

    /** Prints {@code node list}'s table and summary; returns its exit code: 0 when every node not removed is live. */
    static int printList(ClusterInfo c, PrintWriter out) {
        String row = "%-21s %-8s %-4s %8s %8s %10s %s%n";
        out.printf(row, "NODE", "STATE", "LIVE", "REPLICAS", "LEADERS", "DISK", "MAP");
        boolean allLive = true;
        for (ClusterInfo.Node n : byEndpoint(c)) {
            ClusterInfo.Status s = n.status();
            boolean live = n.live();
            if (n.state() != NodeState.REMOVED) {
                allLive &= live;
            }
            String state = n.state() == NodeState.UP && s != null && s.down() ? "down" : state(n.state());
            out.printf(row, n.endpoint(), state, live ? "yes" : "no", c.replicas(n.endpoint()),
                    s == null ? 0 : s.leaders(), s == null ? "-" : human(s.diskBytes()), mapRole(c, n.endpoint()));
        }
        summary(c).forEach(out::println);
        return allLive ? 0 : 1;
    }

    /**
     * "cluster ID: N nodes, replication.factor F, map leader X" (N: the nodes not removed), then a line per node that
     * lacks replicas the map lists on it, then when replicas are moving one line per move and the count of moves done
     * by this map leader.
     */
    static List<String> summary(ClusterInfo c) {
        long members = c.nodes().stream().filter(n -> n.state() != NodeState.REMOVED).count();
        List<String> lines = new ArrayList<>();
        lines.add("cluster " + c.clusterId() + ": " + members + " nodes, replication.factor " + c.factor()
                + ", map leader " + (c.mapLeader().isEmpty() ? "(none)" : c.mapLeader()));
        for (ClusterInfo.Node n : byEndpoint(c)) {
            ClusterInfo.Status st = n.status();
            if (st != null && st.missing() > 0) {
                lines.add("node " + n.endpoint() + " lacks " + st.missing() + " of the " + st.replicas()
                        + " replicas the map lists on it (a wiped disk, being rebuilt): those regions have one copy"
                        + " fewer until then; replace no other node meanwhile");
            }
        }
        for (ClusterInfo.Move mv : c.moves()) {
            lines.add("moving region " + mv.regionId() + ": " + mv.from() + " -> " + mv.to() + " ("
                    + mv.reason() + ", running " + TimeUnit.MILLISECONDS.toSeconds(mv.runningMs()) + " s)");
        }
        if (!c.moves().isEmpty()) {
            lines.add("moves done by this map leader: " + c.movesDone());
        }
        return lines;
    }

    private static List<ClusterInfo.Node> byEndpoint(ClusterInfo c) {
        List<ClusterInfo.Node> nodes = new ArrayList<>(c.nodes());
        nodes.sort(Comparator.comparing(ClusterInfo.Node::endpoint));
        return nodes;
    }

    /** up, draining or removed ("unknown" for a state this client does not know). */
    static String state(NodeState s) {
        return s == null ? "unknown" : s.name().toLowerCase(Locale.ROOT);
    }

    /** The node's part in the map's Raft group: leader, voter, learner or "-". */
    static String mapRole(ClusterInfo c, String node) {
        if (node.equals(c.mapLeader())) {
            return "leader";
        }
        if (c.mapVoters().contains(node)) {
            return "voter";
        }
        return c.mapLearners().contains(node) ? "learner" : "-";
    }

    /** Bytes for humans: 512 B, 1.5 KiB, 20.0 MiB, 3.2 GiB, 1.1 TiB. */
    static String human(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }
}

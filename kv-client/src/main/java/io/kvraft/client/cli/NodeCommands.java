package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvException;
import io.kvraft.client.proto.KvProto.ErrorCode;
import io.kvraft.client.proto.KvProto.RegionInfo;
import io.kvraft.client.proto.KvProto.RegionsRequest;
import io.kvraft.client.proto.KvProto.RegionsResponse;
import io.kvraft.client.rpc.Transport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

/** {@code node list} and {@code node drain NODE}: the cluster's nodes, and moving every replica off one of them. */
final class NodeCommands {

    private NodeCommands() {
    }

    @Command(name = "node", subcommands = {ListNodes.class, Drain.class}, mixinStandardHelpOptions = true,
            description = "The cluster's nodes: 'node list' shows each one's replicas and leaders; 'node drain NODE'"
                    + " moves every replica off NODE (see move-replica).")
    static final class NodeCommand implements Callable<Integer> {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            throw new CommandLine.ParameterException(spec.commandLine(), "node needs a subcommand: list or drain NODE");
        }
    }

    /** Each node's own answer (null: it did not answer), asked all at once. */
    static Map<String, RegionsResponse> ask(KvCtl parent, Set<String> nodes, long timeoutMs) {
        Map<String, CompletableFuture<RegionsResponse>> calls = new TreeMap<>();
        Map<String, RegionsResponse> answers = new TreeMap<>();
        try (Transport transport = new Transport(parent.clientConfig().tls())) {
            for (String n : nodes) {
                calls.put(n, transport.call(n, RegionsRequest.getDefaultInstance(), timeoutMs));
            }
            calls.forEach((n, f) -> {
                RegionsResponse r = null;
                try {
                    r = f.join();
                    if (r.hasError() && r.getError().getCode() != ErrorCode.OK) {
                        r = null;
                    }
                } catch (RuntimeException down) {
                    // not answering: shown as down
                }
                answers.put(n, r);
            });
        }
        return answers;
    }

    /** The configured servers and every replica's node. */
    static Set<String> nodes(KvCtl parent, List<RegionInfo> regions) {
        Set<String> nodes = new LinkedHashSet<>(parent.clientConfig().servers());
        regions.forEach(r -> nodes.addAll(r.getPeersList()));
        return nodes;
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "Each node: up or down, the regions it holds a"
            + " replica of, the regions it leads. Exit 0 when every node answers, 1 otherwise.")
    static final class ListNodes implements Callable<Integer> {
        @ParentCommand
        NodeCommand node;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            KvCtl parent = (KvCtl) spec.parent().parent().userObject();
            try (KvClient c = parent.connect()) {
                List<RegionInfo> regions = c.regions().join();
                Map<String, RegionsResponse> answers = ask(parent, nodes(parent, regions), 3000);
                PrintWriter out = spec.commandLine().getOut();
                out.printf("%-21s %-5s %8s %8s%n", "NODE", "STATE", "REPLICAS", "LEADERS");
                boolean allUp = true;
                for (Map.Entry<String, RegionsResponse> e : answers.entrySet()) {
                    long replicas = regions.stream().filter(r -> r.getPeersList().contains(e.getKey())).count();
                    long leaders = regions.stream().filter(r -> r.getLeader().equals(e.getKey())).count();
                    allUp &= e.getValue() != null;
                    out.printf("%-21s %-5s %8d %8d%n", e.getKey(), e.getValue() != null ? "up" : "down", replicas, leaders);
                }
                return allUp ? 0 : 1;
            }
        }
    }

    @Command(name = "drain", mixinStandardHelpOptions = true, description = {"Moves every replica on NODE to the other"
            + " nodes, one region at a time (move-replica, to the node that holds fewest replicas among those without"
            + " one of that region and answering), and leaves NODE holding none. Prints a line per move.",
            "Refused with nothing moved when NODE holds no replica and is not a node of the cluster, or when some region"
                    + " of NODE has a replica on every other node that answers (add a node first)."})
    static final class Drain implements Callable<Integer> {
        @ParentCommand
        NodeCommand node;
        @Parameters(index = "0", paramLabel = "NODE", description = "host:port of the node to drain")
        String target;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            KvCtl parent = (KvCtl) spec.parent().parent().userObject();
            io.kvraft.client.config.HostPort.parse(target);
            PrintWriter out = spec.commandLine().getOut();
            try (KvClient c = parent.connect()) {
                List<RegionInfo> regions = c.regions().join();
                Set<String> nodes = nodes(parent, regions);
                if (!nodes.contains(target)) {
                    throw new KvException(ErrorCode.INVALID_ARGUMENT, "node " + target + " is not a node of the cluster "
                            + nodes);
                }
                Map<String, RegionsResponse> answers = ask(parent, nodes, 3000);
                List<String> up = new ArrayList<>();
                answers.forEach((n, r) -> {
                    if (r != null && !n.equals(target)) {
                        up.add(n);
                    }
                });
                List<Move> plan = plan(regions, target, up);
                int done = 0;
                for (Move m : plan) {
                    RegionInfo r = c.moveReplica(m.region(), target, m.to()).join();
                    done++;
                    out.println("region " + m.region() + ": " + target + " -> " + m.to() + " (" + done + "/" + plan.size()
                            + "); peers " + String.join(",", r.getPeersList()));
                }
                out.println(plan.isEmpty() ? "node " + target + " holds no replica" : "node " + target + " drained: "
                        + plan.size() + " replicas moved");
                return 0;
            }
        }
    }

    record Move(int region, String to) {
    }

    /**
     * Where each replica on {@code node} goes: to the node of {@code candidates} without a replica of that region that
     * holds fewest replicas, counting the moves planned before it.
     *
     * @throws KvException INVALID_ARGUMENT when a region has a replica on every candidate
     */
    static List<Move> plan(List<RegionInfo> regions, String node, List<String> candidates) {
        Map<String, Integer> held = new TreeMap<>();
        candidates.forEach(n -> held.put(n, 0));
        for (RegionInfo r : regions) {
            r.getPeersList().forEach(p -> held.computeIfPresent(p, (k, v) -> v + 1));
        }
        List<Move> moves = new ArrayList<>();
        for (RegionInfo r : KvCtl.sorted(regions)) {
            if (!r.getPeersList().contains(node)) {
                continue;
            }
            String best = null;
            for (String n : candidates) {
                if (!r.getPeersList().contains(n) && (best == null || held.get(n) < held.get(best))) {
                    best = n;
                }
            }
            if (best == null) {
                throw new KvException(ErrorCode.INVALID_ARGUMENT, "cannot drain " + node + ": region " + r.getId()
                        + " has a replica on every other node that answers " + candidates + " (its replicas: "
                        + r.getPeersList() + "); add a node or bring one back first. Nothing was moved");
            }
            held.merge(best, 1, Integer::sum);
            moves.add(new Move(r.getId(), best));
        }
        return moves;
    }
}

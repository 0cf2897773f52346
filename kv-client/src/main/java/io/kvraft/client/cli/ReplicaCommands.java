package io.kvraft.client.cli;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.MapRecoveryPlan;
import io.kvraft.client.admin.RecoveryPlan;
import io.kvraft.client.admin.RecoverySurvey;
import io.kvraft.client.admin.RegionInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

/**
 * {@code rebuild-replica REGION NODE} and {@code add-replica REGION NODE}: the placement's repairs, by hand; {@code
 * recover-region REGION}: the last resort for a region that lost a majority of its replicas for good.
 */
final class ReplicaCommands {

    private ReplicaCommands() {
    }

    @Command(name = "rebuild-replica", mixinStandardHelpOptions = true, description = {"Rebuilds region REGION's replica"
            + " on NODE, a voter of the region whose node lost its data (a wiped disk started again at its address): on"
            + " the region's leader, NODE is taken out of the voters, then it joins again by the steps of move-replica"
            + " (an empty replica, a learner catching up, a voter). The cluster map's placement does this by itself"
            + " once NODE has reported holding no replica of REGION for 10 s. Prints the region with its peers.",
            "Refused with nothing changed when NODE is no voter of REGION or still holds a replica of it, or when the"
                    + " other replicas are not all alive (they must be a majority on their own)."})
    static final class Rebuild implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;

        @CommandLine.Parameters(index = "0", paramLabel = "REGION", description = "the region (see `regions`)")
        int regionId;

        @CommandLine.Parameters(index = "1", paramLabel = "NODE", description = "host:port of the node to rebuild on")
        String node;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try (KvAdmin c = parent.admin()) {
                RegionInfo r = c.rebuildReplica(regionId, node).join();
                spec.commandLine().getOut().println("region " + r.id() + ": replica on " + node + " rebuilt; peers "
                        + String.join(",", r.peers()) + ", leader " + r.leader());
                return 0;
            }
        }
    }

    @Command(name = "add-replica", mixinStandardHelpOptions = true, description = {"Adds a replica of region REGION on"
            + " NODE by the steps of move-replica, taking none away: for a region left with fewer replicas than"
            + " replication.factor (the cluster map's placement does this by itself). Prints the region with its peers.",
            "Refused with nothing changed when NODE holds a replica of REGION already or is not a cluster node."})
    static final class Add implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;

        @CommandLine.Parameters(index = "0", paramLabel = "REGION", description = "the region (see `regions`)")
        int regionId;

        @CommandLine.Parameters(index = "1", paramLabel = "NODE", description = "host:port of the node that takes it")
        String node;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try (KvAdmin c = parent.admin()) {
                RegionInfo r = c.addReplica(regionId, node).join();
                spec.commandLine().getOut().println("region " + r.id() + ": replica added on " + node + "; peers "
                        + String.join(",", r.peers()) + ", leader " + r.leader());
                return 0;
            }
        }
    }

    @Command(name = "recover-region", mixinStandardHelpOptions = true, description = {"Recovers region REGION by force"
            + " once it lost a majority of its replicas for good (two of three disks gone): the replicas left on live"
            + " nodes become its voters, elect a leader among themselves, and the cluster map's placement adds replicas"
            + " until it has replication.factor again. Writes that reached only the lost replicas are gone,"
            + " acknowledged ones among them. With --all instead of REGION: every region of the cluster map that lost"
            + " a majority of its voters, from one look at the live nodes, recovered side by side.",
            "Without --yes, prints the plan and changes nothing: the survivors with their term and applied index, and"
                    + " the lost voters. Refused (exit 1, nothing changed) while a replica knows a leader, while a majority"
                    + " of the voters is live, and until every lost voter's node is removed from the cluster map (node"
                    + " remove NODE --force), so that none can come back with its copy and elect a leader of the old"
                    + " voters. Never start a removed node again with its data directory (it is refused). With --all,"
                    + " regions that need nothing are counted, each region that cannot be recovered gets a line saying"
                    + " why, and the exit code is 1 when there was one (the others are still recovered)."})
    static final class Recover implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;

        @CommandLine.Parameters(index = "0", arity = "0..1", paramLabel = "REGION",
                description = "the region (see `regions`); or --all")
        Integer regionId;

        @CommandLine.Option(names = "--all", description = "every region that lost a majority of its voters")
        boolean all;

        @CommandLine.Option(names = "--yes", description = "recover it now, accepting that writes only the lost"
                + " replicas had are gone")
        boolean yes;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if (all == (regionId != null)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "give either REGION or --all");
            }
            java.io.PrintWriter out = spec.commandLine().getOut();
            try (KvAdmin c = parent.admin()) {
                if (!all) {
                    RecoveryPlan plan = c.planRecovery(regionId).join();
                    print(out, plan);
                    if (!yes) {
                        out.println("nothing changed; to make " + String.join(", ", plan.survivors()) + " its voters,"
                                + " run again with --yes");
                        return 0;
                    }
                    out.println(recovered(c.recoverRegion(plan).join()));
                    return 0;
                }
                return recoverAll(c, out);
            }
        }

        private int recoverAll(KvAdmin c, java.io.PrintWriter out) {
            RecoverySurvey survey = c.surveyRecovery().join();
            out.println(survey.whole() + " regions have a leader or a live majority; " + survey.plans().size()
                    + " lost a majority of their voters and can be recovered; " + survey.refused().size()
                    + " cannot be recovered now");
            survey.plans().forEach(p -> print(out, p));
            java.io.PrintWriter err = spec.commandLine().getErr();
            survey.refused().values().forEach(e -> err.println(e.getMessage())); // each names its region
            List<Integer> ids = survey.plans().stream().map(RecoveryPlan::regionId).toList();
            if (!yes || ids.isEmpty()) {
                if (!ids.isEmpty()) {
                    out.println("nothing changed; to recover regions " + ids + ", run again with --yes");
                }
                return survey.refused().isEmpty() ? 0 : 1;
            }
            List<CompletableFuture<RegionInfo>> recoveries = survey.plans().stream().map(c::recoverRegion).toList();
            int failed = 0;
            for (int i = 0; i < ids.size(); i++) {
                try {
                    out.println(recovered(recoveries.get(i).join()));
                } catch (java.util.concurrent.CompletionException e) {
                    err.println("region " + ids.get(i) + ": " + io.kvraft.common.KvException.unwrap(e).getMessage());
                    failed++;
                }
            }
            out.println((ids.size() - failed) + " of " + ids.size() + " regions recovered");
            return failed == 0 && survey.refused().isEmpty() ? 0 : 1;
        }

        private static void print(java.io.PrintWriter out, RecoveryPlan plan) {
            out.println("region " + plan.regionId() + ": " + plan.survivors().size() + " of its " + plan.voters().size()
                    + " voters survive (conf version " + plan.confVer() + "):");
            plan.replicas().forEach((node, r) -> out.println("  " + node + "  term " + r.term() + ", applied index "
                    + r.appliedIndex() + ", " + r.role().toLowerCase(java.util.Locale.ROOT)));
            out.println("  lost (removed from the cluster map): " + String.join(", ", plan.lost()));
            out.println("  writes acknowledged after applied index " + plan.applied() + " may have reached only the"
                    + " lost replicas: those are gone once it is recovered");
        }

        private static String recovered(RegionInfo r) {
            return "region " + r.id() + " recovered: leader " + r.leader() + ", term " + r.term()
                    + ", voters " + String.join(",", r.peers()) + "; the cluster map's placement adds"
                    + " replicas until replication.factor";
        }
    }

    @Command(name = "recover-map", mixinStandardHelpOptions = true, description = {"Recovers the cluster map's own Raft"
            + " group by force once it lost a majority of its voters for good (two of its three nodes' disks gone):"
            + " then nothing answers admin calls, and node remove and recover-region cannot run. Every node this client"
            + " reaches is asked for its replica of the group (no leader needed); the surviving voters become the"
            + " group's voters and elect a leader, which first marks the lost voters' nodes removed (a node that comes"
            + " back with its old data directory is then refused and stops), then adds voters on the live nodes. Map"
            + " changes only the lost voters had are gone. After it, recover the regions that lost their majority with"
            + " those nodes: recover-region --all --yes.",
            "Without --yes, prints the plan and changes nothing: the survivors with their log's last index, and the"
                    + " lost voters. Refused (exit 1, nothing changed) while a replica of the group knows a leader,"
                    + " while a majority of its voters answers, and when no voter answers. Use it only for nodes that"
                    + " cannot come back: a node that is merely down rejoins by itself once started."})
    static final class RecoverMap implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;

        @CommandLine.Option(names = "--yes", description = "recover it now, accepting that map changes only the lost"
                + " voters had are gone and that their nodes are removed for good")
        boolean yes;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            java.io.PrintWriter out = spec.commandLine().getOut();
            try (KvAdmin c = parent.admin()) {
                MapRecoveryPlan plan = c.planMapRecovery().join();
                out.println("cluster map: " + plan.survivors().size() + " of its " + plan.voters().size()
                        + " voters answer:");
                plan.replicas().forEach((node, r) -> out.println("  " + node + "  last log index " + r.lastLogIndex()
                        + ", " + r.role().toLowerCase(java.util.Locale.ROOT) + ", map version " + r.mapVersion()));
                out.println("  lost (to be removed from the cluster map): " + String.join(", ", plan.lost()));
                if (!yes) {
                    out.println("nothing changed; to make " + String.join(", ", plan.survivors()) + " the map's voters"
                            + " and remove " + String.join(", ", plan.lost()) + " for good, run again with --yes");
                    return 0;
                }
                ClusterInfo map = c.recoverMap(plan).join();
                out.println("cluster map recovered: leader " + map.mapLeader() + ", voters "
                        + String.join(",", map.mapVoters()) + "; removed " + String.join(", ", plan.lost())
                        + "; next: recover-region --all --yes for the regions that lost their majority with them");
                return 0;
            }
        }
    }
}

package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.proto.KvProto.RegionInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

import java.util.concurrent.Callable;

/** {@code rebuild-replica REGION NODE} and {@code add-replica REGION NODE}: the placement's repairs, by hand. */
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
            try (KvClient c = parent.connect()) {
                RegionInfo r = c.rebuildReplica(regionId, node).join();
                spec.commandLine().getOut().println("region " + r.getId() + ": replica on " + node + " rebuilt; peers "
                        + String.join(",", r.getPeersList()) + ", leader " + r.getLeader());
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
            try (KvClient c = parent.connect()) {
                RegionInfo r = c.addReplica(regionId, node).join();
                spec.commandLine().getOut().println("region " + r.getId() + ": replica added on " + node + "; peers "
                        + String.join(",", r.getPeersList()) + ", leader " + r.getLeader());
                return 0;
            }
        }
    }
}

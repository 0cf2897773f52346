package io.kvraft.client.cli;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

import java.util.concurrent.Callable;

/** {@code move-replica REGION FROM TO}: moves one replica of a region to another node, on the region's leader. */
@Command(name = "move-replica", mixinStandardHelpOptions = true, description = {"Moves region REGION's replica on node"
        + " FROM to node TO (host:port of cluster nodes), on the region's leader, by jraft's steps: TO starts an empty"
        + " replica, joins as a learner and catches up (a snapshot, then the log), one configuration change makes it a"
        + " voter and takes FROM out, and FROM drops its replica (group, files and data). Clients keep running"
        + " throughout. Prints the region with its new peers.",
        "Refused with nothing changed when FROM holds no replica of REGION, TO holds one already or is not a cluster"
                + " node, the region splits, merges or moves another replica (BUSY), or the move would leave it without"
                + " a majority; a TO that does not catch up in time is taken out again."})
final class MoveReplicaCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @CommandLine.Parameters(index = "0", paramLabel = "REGION", description = "the region (see `regions`)")
    int regionId;

    @CommandLine.Parameters(index = "1", paramLabel = "FROM", description = "host:port of the node whose replica moves")
    String from;

    @CommandLine.Parameters(index = "2", paramLabel = "TO", description = "host:port of the node that takes it")
    String to;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        try (KvAdmin c = parent.admin()) {
            RegionInfo r = c.moveReplica(regionId, from, to).join();
            spec.commandLine().getOut().println("region " + r.id() + ": replica moved " + from + " -> " + to
                    + "; peers " + String.join(",", r.peers()) + ", leader " + r.leader());
            return 0;
        }
    }
}

package io.kvraft.client.cli;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

import java.util.concurrent.Callable;

/** {@code merge LEFT RIGHT}: merges a region into the one before it, on the left region's leader. */
@Command(name = "merge", mixinStandardHelpOptions = true, description = {"Merges region RIGHT into region LEFT on LEFT's leader: LEFT must end where RIGHT"
        + " starts, on the same nodes. LEFT takes both ranges with a new epoch; RIGHT's Raft group is stopped and its files"
        + " removed on every node (no data moves). Prints the merged region.",
        "A merge that cannot finish (a replica that does not get RIGHT's final data within merge.timeoutMs, a crash) is"
                + " rolled back whole and the command fails with the reason."})
final class MergeCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @CommandLine.Parameters(index = "0", paramLabel = "LEFT", description = "the region with the lower keys (see `regions`)")
    int leftId;

    @CommandLine.Parameters(index = "1", paramLabel = "RIGHT", description = "the region that starts where LEFT ends")
    int rightId;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        try (KvAdmin c = parent.admin()) {
            RegionInfo r = c.merge(leftId, rightId).join();
            spec.commandLine().getOut().println("region " + r.id() + " [" + KvCtl.bound(r.startKey(), "-inf") + ", "
                    + KvCtl.bound(r.endKey(), "+inf") + ") epoch " + r.epoch());
            return 0;
        }
    }
}

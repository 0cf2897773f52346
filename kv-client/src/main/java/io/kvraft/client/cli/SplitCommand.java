package io.kvraft.client.cli;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.util.List;
import java.util.concurrent.Callable;

/** {@code split REGION [--at KEY]}: splits a region in two on its leader. */
@Command(name = "split", mixinStandardHelpOptions = true, description = {"Splits REGION in two on its leader: it keeps the keys below the split key,"
        + " a new region on the same nodes takes the rest (no data moves; both get a new epoch).",
        "Without --at it splits at about its middle key. Prints both regions."})
final class SplitCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @CommandLine.Parameters(index = "0", paramLabel = "REGION", description = "the region's id (see `regions`)")
    int regionId;

    @Option(names = "--at", paramLabel = "KEY", description = "split key: strictly inside the region (above its start)")
    String at;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        try (KvAdmin c = parent.admin()) {
            List<RegionInfo> halves = c.split(regionId, at == null ? null : parent.bytes(at)).join();
            for (RegionInfo r : halves) {
                spec.commandLine().getOut().println("region " + r.id() + " [" + KvCtl.bound(r.startKey(), "-inf") + ", "
                        + KvCtl.bound(r.endKey(), "+inf") + ") epoch " + r.epoch());
            }
            return 0;
        }
    }
}

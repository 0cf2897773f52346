package io.kvraft.client.cli;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.AdminResponse;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.TransferLeaderRequest;
import io.kvraft.common.rpc.Transport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

import java.util.concurrent.Callable;

/** {@code transfer-leader REGION TARGET}: asks the region's leader to hand leadership to TARGET. */
@Command(name = "transfer-leader", description = "Moves the leadership of REGION to TARGET (host:port of a peer).")
final class TransferLeaderCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @CommandLine.Parameters(index = "0", paramLabel = "REGION")
    int regionId;

    @CommandLine.Parameters(index = "1", paramLabel = "TARGET")
    String target;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        try (KvAdmin c = parent.admin(); Transport t = new Transport(parent.clientConfig().tls())) {
            RegionInfo region = c.regions().join().stream().filter(r -> r.id() == regionId).findFirst()
                    .orElseThrow(() -> new KvException(ErrorCode.REGION_NOT_FOUND, "no region " + regionId));
            transfer(t, region, target);
            spec.commandLine().getOut().println("region " + regionId + ": leadership transfer to " + target + " started");
            return 0;
        }
    }

    static void transfer(Transport t, RegionInfo region, String target) {
        if (region.leader().isEmpty()) {
            throw new KvException(ErrorCode.NO_LEADER, "region " + region.id() + " has no leader now");
        }
        AdminResponse resp = t.<AdminResponse>call(region.leader(), TransferLeaderRequest.newBuilder()
                .setRegionId(region.id()).setTarget(target).build(), 5000).join();
        if (resp.hasError() && resp.getError().getCode() != KvProto.ErrorCode.OK) {
            throw KvException.fromWire(resp.getError());
        }
    }
}

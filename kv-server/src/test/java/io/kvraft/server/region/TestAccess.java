package io.kvraft.server.region;

import io.kvraft.common.proto.KvProto.WriteBatch;
import io.kvraft.server.coord.Locks;

/** Package-private pieces of the region for tests elsewhere. */
public final class TestAccess {

    private TestAccess() {
    }

    public static Locks.Clock clockOf(WriteBatch batch, long entryTerm) {
        return RegionStateMachine.clockOf(0, batch, entryTerm);
    }

    /** The index of the region replica's last snapshot, taken or installed. */
    public static long snapshotIndex(Region region) {
        return region.snapshotIndex();
    }
}

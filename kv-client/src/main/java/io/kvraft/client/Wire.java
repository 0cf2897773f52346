package io.kvraft.client;

import io.kvraft.common.proto.KvProto;

import java.util.List;

/** The data API's types from and to the wire's (kv.proto): the one place they are converted. */
final class Wire {

    private Wire() {
    }

    static KvProto.ReadMode toWire(ReadMode mode) {
        return switch (mode) {
            case READ_INDEX -> KvProto.ReadMode.READ_INDEX;
            case LEADER_LEASE -> KvProto.ReadMode.LEADER_LEASE;
            case FOLLOWER -> KvProto.ReadMode.FOLLOWER;
            case STALE -> KvProto.ReadMode.STALE;
        };
    }

    static LockInfo lockInfo(KvProto.LockInfo l) {
        return new LockInfo(l.getKey().toByteArray(), l.getHolder().toByteArray(), l.getToken(), l.getCount(),
                l.getLeaseLeftMs(), l.getLeaseMs());
    }

    static List<LockInfo> lockInfos(List<KvProto.LockInfo> locks) {
        return locks.stream().map(Wire::lockInfo).toList();
    }
}

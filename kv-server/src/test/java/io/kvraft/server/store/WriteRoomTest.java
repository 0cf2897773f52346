package io.kvraft.server.store;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class WriteRoomTest {

    private final AtomicLong now = new AtomicLong();
    private final AtomicLong free = new AtomicLong(1L << 40);
    private final DiskGuard disk = new DiskGuard(Path.of("/data"), 1000, free::get);
    private final WriteRoom room = new WriteRoom("n1:1", null, disk, now::get);

    @Test
    void when_thisNodesDiskIsFull_then_everyRegionHereRefusesAndItsPeersAreToldWhy() {
        assertThat(room.refusal(List.of("n1:1", "n2:1"))).isNull();
        assertThat(room.localRefusal()).isEmpty();
        free.set(10);
        room.check();
        assertThat(room.full()).isTrue();
        assertThat(room.localRefusal()).startsWith("node n1:1: disk: 0 MiB free in /data");
        assertThat(room.refusal(List.of("n2:1", "n3:1"))).startsWith("node n1:1: disk:")
                .endsWith("writes that add data are refused, deletes pass");
        free.set(2000);
        room.check();
        assertThat(room.refusal(List.of("n1:1"))).isNull();
        assertThat(room.localRefusal()).isEmpty();
    }

    @Test
    void when_aPeerSaysItIsFull_then_onlyRegionsWithAReplicaThereRefuseUntilItSaysOtherwiseOrFallsSilent() {
        room.peerSays("n2:1", "node n2:1: disk: 1 MiB free");
        assertThat(room.full()).as("this node itself has room").isFalse();
        assertThat(room.refusal(List.of("n1:1", "n3:1"))).isNull();
        assertThat(room.refusal(List.of("n1:1", "n2:1", "n3:1"))).contains("node n2:1: disk: 1 MiB free")
                .contains("a replica of this region");

        room.peerSays("n2:1", "");
        assertThat(room.refusal(List.of("n1:1", "n2:1"))).isNull();

        room.peerSays("n2:1", "node n2:1: disk: 1 MiB free");
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(WriteRoom.PEER_WORD_MS) - 1);
        assertThat(room.refusal(List.of("n2:1"))).isNotNull();
        now.addAndGet(1);
        assertThat(room.refusal(List.of("n2:1"))).as("not said again for %d ms", WriteRoom.PEER_WORD_MS).isNull();
    }
}

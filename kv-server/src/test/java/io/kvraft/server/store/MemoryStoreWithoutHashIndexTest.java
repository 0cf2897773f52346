package io.kvraft.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;

/** The whole store contract again with {@code store.hashIndex: false}: the skip list answers alone. */
class MemoryStoreWithoutHashIndexTest extends KvStoreContractTest {

    @Override
    protected KvStore openStore(Path dir) {
        return new MemoryStore(false);
    }

    @Test
    void when_openedWithoutTheHashIndex_then_itSaysSo() {
        try (MemoryStore without = new MemoryStore(false); MemoryStore with = new MemoryStore()) {
            assertThat(without.hasHashIndex()).isFalse();
            assertThat(with.hasHashIndex()).isTrue();
        }
    }
}

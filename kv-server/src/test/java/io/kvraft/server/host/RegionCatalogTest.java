package io.kvraft.server.host;

import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.host.RegionLayout.RegionSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RegionCatalogTest {

    private static final List<String> FIVE = List.of("a:1", "b:1", "c:1", "d:1", "e:1");

    @TempDir
    Path dir;

    private static List<RegionSpec> layout(List<String> nodes, int regions, int factor) {
        return RegionLayout.of(new ClusterConfig(nodes, regions, null), factor);
    }

    @Test
    void when_aNodeHoldsSomeRegions_then_itsCatalogListsThoseWithTheirPeers_andReadsThemBack() {
        List<RegionSpec> layout = layout(FIVE, 10, 3);

        RegionCatalog made = RegionCatalog.open(dir, layout, "a:1", FIVE, 3);
        RegionCatalog read = RegionCatalog.open(dir, layout, "a:1", FIVE, 3);

        List<RegionSpec> held = layout.stream().filter(r -> r.peers().contains("a:1")).toList();
        assertThat(held).hasSize(6);
        for (RegionCatalog c : List.of(made, read)) {
            assertThat(c.entries()).extracting(RegionCatalog.Entry::id).containsExactlyElementsOf(
                    held.stream().map(RegionSpec::id).toList());
            assertThat(c.entries()).allSatisfy(e -> assertThat(e.peers()).hasSize(3).contains("a:1"));
        }
    }

    @Test
    void when_aNodeHoldsNoRegion_then_itsEmptyCatalogReadsBack() {
        List<RegionSpec> layout = layout(FIVE, 1, 3); // region 1 on a, b and c

        RegionCatalog.open(dir, layout, "e:1", FIVE, 3);

        assertThat(RegionCatalog.open(dir, layout, "e:1", FIVE, 3).entries()).isEmpty();
    }

    @Test
    void when_theConfigNamesOtherNodesOrAnotherFactor_then_theDataDirectoryIsRefused() {
        RegionCatalog.open(dir, layout(FIVE, 10, 3), "a:1", FIVE, 3);
        List<String> four = FIVE.subList(0, 4);

        assertThatThrownBy(() -> RegionCatalog.open(dir, layout(FIVE, 10, 5), "a:1", FIVE, 5))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("was made for a cluster of " + FIVE + " with replication.factor 3")
                .hasMessageContaining("the config says " + FIVE + " with replication.factor 5");
        assertThatThrownBy(() -> RegionCatalog.open(dir, layout(four, 10, 3), "a:1", four, 3))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("the config says " + four);
        List<String> reordered = List.of("e:1", "d:1", "c:1", "b:1", "a:1");
        assertThat(RegionCatalog.open(dir, layout(reordered, 10, 3), "a:1", reordered, 3).entries())
                .as("the same nodes in another order: the regions keep the peers they were made with")
                .extracting(RegionCatalog.Entry::peers).contains(List.of("a:1", "b:1", "c:1"));
    }

    @Test
    void when_aCatalogPredatesPlacement_then_everyRegionIsOnEveryNode_andTheFileIsRewrittenWithThem() throws Exception {
        Files.writeString(dir.resolve(RegionCatalog.FILE), """
                {"version": 1, "regions": [{"id": 1, "end": "80", "epoch": 1}, {"id": 2, "start": "80", "epoch": 1}]}
                """);
        List<String> three = FIVE.subList(0, 3);

        RegionCatalog c = RegionCatalog.open(dir, layout(three, 2, 3), "a:1", three, 3);

        assertThat(c.entries()).extracting(RegionCatalog.Entry::peers).containsOnly(three);
        assertThat(Files.readString(dir.resolve(RegionCatalog.FILE))).contains("\"nodes\"").contains("\"factor\" : 3");
        assertThatThrownBy(() -> RegionCatalog.open(dir, layout(FIVE, 2, 3), "a:1", FIVE, 3))
                .as("adding nodes to the YAML of a cluster made without placement").isInstanceOf(IllegalStateException.class);
    }
}

package io.kvraft.server;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.Architectures.LayeredArchitecture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The server's layers, each knowing only those below it (docs/architecture.md draws them). A class that reaches
 * above its layer, or into kv-client past its common package, fails the build with the offending access named.
 */
class LayersTest {

    /** Each layer, and the layers it may use; a layer not named may not be used. */
    static final Map<String, List<String>> MAY_USE = new LinkedHashMap<>();

    static {
        MAY_USE.put("launch", List.of("node", "config", "common"));
        MAY_USE.put("node", List.of("rpc", "meta", "shape", "balance", "metrics", "backup", "host", "region", "raft",
                "raftlog", "store", "coord", "config", "fs", "common"));
        MAY_USE.put("rpc", List.of("meta", "shape", "host", "region", "raft", "backup", "metrics", "store", "coord",
                "config", "common"));
        MAY_USE.put("meta", List.of("shape", "balance", "host", "region", "raft", "config", "fs", "common"));
        MAY_USE.put("shape", List.of("host", "region", "raft", "store", "coord", "config", "common"));
        MAY_USE.put("balance", List.of("host", "region", "raft", "config", "common"));
        MAY_USE.put("metrics", List.of("host", "region", "raft", "config", "common"));
        MAY_USE.put("backup", List.of("store", "common"));
        MAY_USE.put("host", List.of("region", "raft", "raftlog", "store", "config", "fs", "common"));
        MAY_USE.put("region", List.of("raft", "store", "coord", "config", "fs", "common"));
        MAY_USE.put("raft", List.of("config", "common"));
        MAY_USE.put("raftlog", List.of("config", "fs", "common"));
        MAY_USE.put("store", List.of("fs", "common"));
        MAY_USE.put("coord", List.of("common"));
        MAY_USE.put("config", List.of("common"));
        MAY_USE.put("fs", List.of());
        MAY_USE.put("common", List.of());
    }

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.kvraft");
    }

    @Test
    void each_layer_uses_only_the_layers_below_it() {
        LayeredArchitecture layers = layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("node").definedBy("io.kvraft.server")
                .layer("common").definedBy("io.kvraft.common..");
        for (String layer : MAY_USE.keySet()) {
            if (!layer.equals("node") && !layer.equals("common")) {
                layers = layers.layer(layer).definedBy("io.kvraft.server." + layer + "..");
            }
        }
        for (Map.Entry<String, List<String>> e : MAY_USE.entrySet()) {
            layers = e.getValue().isEmpty() ? layers.whereLayer(e.getKey()).mayNotAccessAnyLayer()
                    : layers.whereLayer(e.getKey()).mayOnlyAccessLayers(e.getValue().toArray(String[]::new));
        }
        layers.check(classes);
    }

    @Test
    void the_server_uses_only_the_common_package_of_kv_client() {
        noClasses().that().resideInAPackage("io.kvraft.server..")
                .should().dependOnClassesThat().resideInAPackage("io.kvraft.client..")
                .because("kv-server shares the wire protocol, transport and config types with the client"
                        + " (io.kvraft.common), never its API, routing or batching")
                .check(classes);
    }

    @Test
    void no_package_depends_on_itself_through_others() {
        slices().matching("io.kvraft.(**)").should().beFreeOfCycles().check(classes);
    }
}

package io.kvraft.client;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.Architectures.LayeredArchitecture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The client's layers: the public API (io.kvraft.client, io.kvraft.client.admin) speaks Java types only, the wire's
 * stay below it, and each package knows only those below it. A change that breaks a rule fails the build with the
 * offending method or access named.
 */
class LayersTest {

    /** The packages whose public classes a user reads. */
    private static final String[] API = {"io.kvraft.client", "io.kvraft.client.admin"};
    /** The wire's types: the generated messages of kv.proto and protobuf's own. */
    private static final String[] WIRE = {"io.kvraft.common.proto..", "com.google.protobuf.."};

    /** Each package of kv-client, and the packages it may use; a package not named may not be used. */
    static final Map<String, List<String>> MAY_USE = new LinkedHashMap<>();

    static {
        MAY_USE.put("cli", List.of("backup", "client", "admin", "route", "config", "common"));
        MAY_USE.put("backup", List.of("client", "admin", "route", "common"));
        MAY_USE.put("client", List.of("admin", "batch", "route", "config", "common"));
        MAY_USE.put("admin", List.of("batch", "route", "common"));
        MAY_USE.put("batch", List.of("route", "config", "common"));
        MAY_USE.put("route", List.of("config", "common"));
        MAY_USE.put("config", List.of("common"));
        MAY_USE.put("common", List.of());
    }

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.kvraft");
    }

    @Test
    void the_public_api_has_no_wire_types_in_its_signatures() {
        codeUnits().that().arePublic().and().areDeclaredInClassesThat().arePublic()
                .and().areDeclaredInClassesThat().resideInAnyPackage(API)
                .should(new ArchCondition<JavaCodeUnit>("take and return no type of " + String.join(" or ", WIRE)) {
                    @Override
                    public void check(JavaCodeUnit unit, ConditionEvents events) {
                        List<JavaType> types = new ArrayList<>(unit.getParameterTypes());
                        types.add(unit.getReturnType());
                        for (JavaType t : types) {
                            for (JavaClass c : t.getAllInvolvedRawTypes()) {
                                if (c.getPackageName().startsWith("io.kvraft.common.proto")
                                        || c.getPackageName().startsWith("com.google.protobuf")) {
                                    events.add(SimpleConditionEvent.violated(unit, unit.getFullName() + " uses "
                                            + c.getName() + " in " + unit.getSourceCodeLocation()));
                                }
                            }
                        }
                    }
                })
                .because("users read KvClient and KvAdmin: records and enums of their own, converted from the wire"
                        + " in one place (Wire, AdminWire)")
                .check(classes);
    }

    @Test
    void the_common_package_uses_nothing_of_the_client() {
        noClasses().that().resideInAPackage("io.kvraft.common..")
                .should().dependOnClassesThat().resideInAPackage("io.kvraft.client..")
                .because("io.kvraft.common is shared with the server, which uses no part of the client")
                .check(classes);
    }

    @Test
    void each_package_uses_only_the_packages_below_it() {
        LayeredArchitecture layers = layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("client").definedBy("io.kvraft.client")
                .layer("common").definedBy("io.kvraft.common..");
        for (String layer : MAY_USE.keySet()) {
            if (!layer.equals("client") && !layer.equals("common")) {
                layers = layers.layer(layer).definedBy("io.kvraft.client." + layer + "..");
            }
        }
        for (Map.Entry<String, List<String>> e : MAY_USE.entrySet()) {
            layers = e.getValue().isEmpty() ? layers.whereLayer(e.getKey()).mayNotAccessAnyLayer()
                    : layers.whereLayer(e.getKey()).mayOnlyAccessLayers(e.getValue().toArray(String[]::new));
        }
        layers.check(classes);
    }

    @Test
    void no_package_depends_on_itself_through_others() {
        slices().matching("io.kvraft.(**)").should().beFreeOfCycles().check(classes);
    }
}

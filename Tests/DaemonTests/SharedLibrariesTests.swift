import Testing
import TestSupport

/// speakerd and composer-cli use Debian's shared libdbus-1 and libbluetooth, so a security update
/// of either reaches them without a rebuild; the Swift runtime is the one part carried inside.
@Suite("Linked as Debian expects")
struct SharedLibrariesTests {
    @Test("speakerd and composer-cli load Debian's shared libdbus-1 and libbluetooth, and no Swift runtime library",
          arguments: ["speakerd", "composer-cli"])
    func sharedSystemLibraries(program: String) async throws {
        // The dynamic loader lists what it would load, and stops (the way ldd works).
        let run = try await ExecutableRun.run(program, [], environment: ["LD_TRACE_LOADED_OBJECTS": "1"])
        #expect(run.status == 0)
        let lines = run.standardOutput.split(separator: "\n")
        for library in ["libdbus-1.so.3", "libbluetooth.so.3"] {
            let line = lines.first { $0.contains(library) }
            #expect(line?.contains("=> /lib/") == true || line?.contains("=> /usr/lib/") == true,
                    "\(program) does not load Debian's \(library): \(run.standardOutput)")
        }
        #expect(!run.standardOutput.contains("libswiftCore"), "\(program) needs the Swift runtime installed")
    }
}

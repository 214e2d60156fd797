import Foundation
import Testing

/// README's "Getting Swift" step: on a machine without a toolchain `scripts/setup` stops and
/// prints the exact commands, and they are the commands README shows.
@Suite("Getting Swift: setup without a toolchain")
struct GettingSwiftTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path

    /// The shell commands in `text`: continuation lines joined, comments and spacing dropped.
    static func commands(in text: some StringProtocol) -> [String] {
        let joined = text.replacingOccurrences(of: "\\\n", with: " ")
        return joined.split(separator: "\n").compactMap { line in
            let command = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .split(separator: " ").joined(separator: " ")
            return command.isEmpty || command.hasPrefix("setup:") || command.hasPrefix("Get it") ? nil : command
        }
    }

    @Test("with no swift on PATH, setup exits 1 with the exact commands to get it, the same as README's")
    func setupSaysHowToGetSwift() async throws {
        let run = try await ExecutableRun.run(program: "/usr/bin/env",
                                              ["-i", "PATH=/usr/bin:/bin", "HOME=/nonexistent", "bash", Self.repository + "/scripts/setup"])
        #expect(run.status == 1)
        #expect(run.standardError.hasPrefix("setup: no `swift` on PATH. speakerd needs the Swift 6.3.1 toolchain from swift.org."),
                "\(run.standardError)")
        let printed = Self.commands(in: run.standardError)
        #expect(printed.contains { $0.hasPrefix("curl -fLO https://download.swift.org/swift-6.3.1-release/") }, "\(printed)")
        #expect(printed.last == "swift --version", "\(printed)")

        let readme = try String(contentsOfFile: Self.repository + "/README.md", encoding: .utf8)
        let section = try #require(readme.range(of: "## Getting Swift").map { readme[$0.upperBound...] })
        let block = try #require(section.range(of: "```sh\n").flatMap { start in
            section[start.upperBound...].range(of: "```").map { section[start.upperBound..<$0.lowerBound] }
        })
        guard run.standardError.contains("debian12.tar.gz") else { return }  // README spells out amd64's
        #expect(Self.commands(in: block) == printed)
    }

    @Test("setup --build-only installs what make and make deb need, and no sound server or test tool (a speaker box keeps its own stack)")
    func buildOnlyPackages() async throws {
        func packages(_ arguments: [String]) async throws -> [String] {
            let run = try await ExecutableRun.run(program: "/usr/bin/env",
                                                  ["-i", "PATH=/usr/bin:/bin", "bash", Self.repository + "/scripts/setup", "--print-packages"] + arguments)
            #expect(run.status == 0, "\(run.standardError)")
            return run.standardOutput.split(separator: "\n").map(String.init)
        }
        let build = try await packages(["--build-only"]), all = try await packages([])
        for needed in ["libdbus-1-dev", "libbluetooth-dev", "libfluidsynth-dev", "libpulse-dev", "pkg-config", "make", "dpkg-dev", "lintian"] {
            #expect(build.contains(needed), "\(needed) missing from --build-only: \(build)")
        }
        for unwanted in ["pulseaudio", "pipewire", "pipewire-pulse", "wireplumber", "valgrind", "python3-dbusmock"] {
            #expect(!build.contains(unwanted), "--build-only would install \(unwanted)")
            #expect(all.contains(unwanted), "the full set lost \(unwanted)")
        }
        #expect(Set(build).isSubset(of: Set(all)), "the full set must build too: \(Set(build).subtracting(all))")
        let refused = try await ExecutableRun.run(program: "/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", "bash", Self.repository + "/scripts/setup", "--bogus"])
        #expect(refused.status == 2)
        #expect(refused.standardError == "setup: unknown option '--bogus' (expected --build-only, --demo or --print-packages)\n")
    }

    @Test("the demo installs only what it needs (no second sound server, no test tools), keeps its WAV and says where, and ends with three commands to try")
    func demoAsANewcomerMeetsIt() async throws {
        let run = try await ExecutableRun.run(program: "/usr/bin/env",
                                              ["-i", "PATH=/usr/bin:/bin", "bash", Self.repository + "/scripts/setup", "--print-packages", "--demo"])
        #expect(run.status == 0, "\(run.standardError)")
        let demo = run.standardOutput.split(separator: "\n").map(String.init)
        for needed in ["libdbus-1-dev", "libbluetooth-dev", "libfluidsynth-dev", "libpulse-dev", "pkg-config", "dbus-daemon",
                       "python3-dbusmock", "timgm6mb-soundfont"] {
            #expect(demo.contains(needed), "\(needed) missing from --demo: \(demo)")
        }
        for unwanted in ["pulseaudio", "pipewire", "pipewire-pulse", "wireplumber", "valgrind", "lintian", "libseccomp2", "man-db"] {
            #expect(!demo.contains(unwanted), "--demo would install \(unwanted)")
        }
        let script = try String(contentsOfFile: Self.repository + "/scripts/demo", encoding: .utf8)
        let lines = script.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("scripts/setup --demo") }, "the demo asks setup for its own packages only")
        #expect(!lines.contains { $0.trimmingCharacters(in: .whitespaces) == "scripts/setup" }, "not the whole test stack")
        // The WAV outlives the demo's work directory (which it removes), and its place is printed.
        #expect(script.contains(#"cp "$work/demo.wav" "$kept""#) && script.contains("kept in $kept"))
        // The last words: three commands to try next.
        let tail = lines.drop { !$0.contains("Next, try:") }
        #expect(tail.dropFirst().filter { $0.hasPrefix("echo \"  ") }.count == 3, "\(tail)")
    }
}

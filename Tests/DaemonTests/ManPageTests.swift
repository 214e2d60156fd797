import Foundation
import TestSupport
import Testing

/// The man pages in docs/man: they format without a warning, match their snapshots (the text
/// `man` shows at 80 columns), and name every subcommand and option the programs' help has, so a
/// new flag without a line in the man page fails here.
@Suite("Man pages")
struct ManPageTests {
    static let manDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/man").standardized.path

    /// What `man` shows, as plain text at 80 columns.
    func rendered(_ page: String) async throws -> ExecutableRun {
        try await ExecutableRun.run(program: "/bin/sh", ["-c", "man --warnings -l \"$1\" | col -bx", "sh", "\(Self.manDirectory)/\(page)"],
                                    environment: ["MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MANROFFSEQ": ""])
    }

    @Test("each page formats without a warning and matches its snapshot", arguments: ["composer-cli.1", "speakerd.8"])
    func snapshot(page: String) async throws {
        let run = try await rendered(page)
        #expect(run.status == 0)
        #expect(run.standardError.isEmpty, "groff warnings: \(run.standardError)")
        #expect(run.standardOutput.contains("EXIT STATUS") && run.standardOutput.contains("FILES")
                && run.standardOutput.contains("ENVIRONMENT") && run.standardOutput.contains("EXAMPLES"))
        if let mismatch = snapshotMismatch(run.standardOutput, named: "man-\(page).txt") { Issue.record(Comment(rawValue: mismatch)) }
    }

    /// The long options (`--name`) and, for the root, the subcommands a help text lists.
    func names(inHelp help: String) -> Set<String> {
        var names = Set<String>()
        for match in help.matches(of: /--[a-z][a-z-]*/) { names.insert(String(match.output)) }
        var inSubcommands = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "SUBCOMMANDS:" { inSubcommands = true; continue }
            if inSubcommands, line.hasPrefix("  "), !line.hasPrefix("   "), !line.hasPrefix("  See '"),
               let word = line.split(separator: " ").first, word.allSatisfy({ $0.isLetter }) {
                names.insert(String(word))
            }
        }
        return names.subtracting(["--help", "--version", "--experimental-dump-help"])
    }

    @Test("composer-cli(1) names every subcommand and every option the help shows")
    func composerCoverage() async throws {
        let page = try await rendered("composer-cli.1").standardOutput
        let root = try await ExecutableRun.run("composer-cli", ["--help"]).standardOutput
        var wanted = names(inHelp: root)
        let subcommands = wanted.filter { !$0.hasPrefix("-") }
        #expect(subcommands.count >= 13, "\(subcommands)")
        for subcommand in subcommands {
            wanted.formUnion(names(inHelp: try await ExecutableRun.run("composer-cli", [subcommand, "--help"]).standardOutput))
        }
        for name in wanted.sorted() {
            #expect(page.contains(name), "man composer-cli does not mention \(name)")
        }
    }

    @Test("speakerd(8) names every option the help shows and the exit statuses speakerd uses")
    func speakerdCoverage() async throws {
        let page = try await rendered("speakerd.8").standardOutput
        let help = try await ExecutableRun.run("speakerd", ["--help"]).standardOutput
        for name in names(inHelp: help).sorted() { #expect(page.contains(name), "man speakerd does not mention \(name)") }
        for status in ["0", "1", "64", "75", "78"] {
            #expect(page.contains("\n       \(status) "), "man speakerd lacks exit status \(status)")
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing

@Suite("composer-cli and speakerd command lines")
struct CommandLineTests {
    static let composerHelps: [[String]] = [
        ["--help"], ["play", "--help"], ["status", "--help"], ["scan", "--help"], ["connect", "--help"],
         ["forget", "--help"], ["startup", "--help"], ["doctor", "--help"], ["stop", "--help"], ["render", "--help"],
         ["volume", "--help"], ["disconnect", "--help"], ["pause", "--help"], ["resume", "--help"], ["speakers", "--help"],
    ]

    @Test("composer-cli help output matches its snapshot", arguments: composerHelps)
    func composerHelp(arguments: [String]) async throws {
        let run = try await ExecutableRun.run("composer-cli", arguments)
        #expect(run.status == 0)
        #expect(run.standardError.isEmpty)
        let name = "composer-cli-" + (arguments.count == 1 ? "root" : arguments[0]) + ".txt"
        if let mismatch = snapshotMismatch(run.standardOutput, named: name) { Issue.record(Comment(rawValue: mismatch)) }
    }

    @Test("speakerd help output matches its snapshot and --version prints the version")
    func speakerdHelp() async throws {
        let help = try await ExecutableRun.run("speakerd", ["--help"])
        #expect(help.status == 0)
        if let mismatch = snapshotMismatch(help.standardOutput, named: "speakerd.txt") { Issue.record(Comment(rawValue: mismatch)) }
        let version = try await ExecutableRun.run("speakerd", ["--version"])
        #expect(version.standardOutput == "0.1.0\n")
    }

    @Test("every help sentence is capitalised and ends with a period")
    func helpSentences() async throws {
        for arguments in Self.composerHelps + [["speakerd-help"]] {
            let run = arguments == ["speakerd-help"]
                ? try await ExecutableRun.run("speakerd", ["--help"]) : try await ExecutableRun.run("composer-cli", arguments)
            // Option and subcommand descriptions start at column 26 in ArgumentParser's layout.
            var sentence = ""
            var sentences: [String] = []
            for line in run.standardOutput.split(separator: "\n", omittingEmptySubsequences: false) {
                let isEntryStart = line.hasPrefix("  ") && line.count > 26 && !line.hasPrefix("                        ")
                    && !line.hasPrefix("  See '")  // ArgumentParser's own footer
                let isContinuation = line.hasPrefix(String(repeating: " ", count: 26))
                if isEntryStart {
                    if !sentence.isEmpty { sentences.append(sentence) }
                    sentence = String(line.dropFirst(26))
                } else if isContinuation {
                    sentence += " " + line.drop(while: { $0 == " " })
                } else {
                    if !sentence.isEmpty { sentences.append(sentence) }
                    sentence = ""
                }
            }
            for text in sentences {
                let withoutDefault = text.replacingOccurrences(of: #" \(default: [^)]*\)"#, with: "", options: .regularExpression)
                #expect(withoutDefault.first?.isUppercase == true, "\(arguments): '\(text)'")
                #expect(withoutDefault.hasSuffix("."), "\(arguments): '\(text)'")
            }
        }
    }

    @Test("failures exit non-zero with exactly one clear line on stderr", arguments: [
        (["connect", "11:22:33"], "composer-cli: '11:22:33' is not a Bluetooth address (it has 8 characters, an address has 17); expected the form 11:22:33:44:55:66"),
        (["forget", "zz:zz:zz:zz:zz:zz"], "composer-cli: 'zz:zz:zz:zz:zz:zz' is not a Bluetooth address (character 1 is not a hexadecimal digit); expected the form 11:22:33:44:55:66"),
        (["status", "--bus", "nowhere"], "composer-cli: bad value 'nowhere' for --bus (expected system, session or a D-Bus address such as unix:path=/run/bus)"),
        (["frobnicate"], "composer-cli: unknown subcommand 'frobnicate'; see 'composer-cli --help' for the list"),
        (["stauts"], "composer-cli: unknown subcommand 'stauts'; did you mean 'status'? See 'composer-cli --help'"),
        (["conect", "11:22:33:44:55:66"], "composer-cli: unknown subcommand 'conect'; did you mean 'connect'? See 'composer-cli --help'"),
        (["play"], "composer-cli: Missing expected argument '<file> ...'"),
    ])
    func composerFailures(arguments: [String], expected: String) async throws {
        let run = try await ExecutableRun.run("composer-cli", arguments)
        #expect(run.status != 0)
        #expect(run.standardError == expected + "\n")
    }

    @Test("an unknown subcommand is a usage error (exit 64), like an unknown option")
    func unknownSubcommandStatus() async throws {
        #expect(try await ExecutableRun.run("composer-cli", ["stauts"]).status == 64)
        #expect(try await ExecutableRun.run("composer-cli", ["--frobnicate"]).status == 64)
    }

    @Test("render errors are one line, with no second 'failed' line")
    func renderFailure() async throws {
        let directory = TemporaryDirectory()
        let run = try await ExecutableRun.run("composer-cli", ["render", directory.path + "/missing.mid", "-o", directory.path + "/out.wav"])
        #expect(run.status == 1)
        #expect(run.standardError == "composer-cli: cannot read \(directory.path)/missing.mid: No such file or directory\n")
    }

    @Test("completion scripts come from composer-cli itself, for bash, zsh and fish", arguments: ["bash", "zsh", "fish"])
    func completions(shell: String) async throws {
        let run = try await ExecutableRun.run("composer-cli", ["--generate-completion-script", shell])
        #expect(run.status == 0)
        #expect(run.standardError.isEmpty)
        for subcommand in ["play", "scan", "startup", "doctor"] { #expect(run.standardOutput.contains(subcommand)) }
        if let mismatch = snapshotMismatch(run.standardOutput, named: "completion-\(shell).txt") { Issue.record(Comment(rawValue: mismatch)) }
    }

    /// What each shell offers after `play `, `render `, `--soundfont ` and `--svg `: the files of
    /// that kind (MIDI songs, soundfonts, SVG pictures) and directories to walk into, not every file.
    @Test("completions offer MIDI files for play and render, soundfonts for --soundfont, SVG files for --svg", arguments: ["bash", "zsh", "fish"])
    func completionsOfferFiles(shell: String) async throws {
        let script = try await ExecutableRun.run("composer-cli", ["--generate-completion-script", shell]).standardOutput
        let patterns: [String] = switch shell {
        case "bash": ["-o plusdirs -fX '!*.@(mid|midi|kar|rmi|smf)'", "-o plusdirs -fX '!*.@(sf2|sf3)'", "-o plusdirs -fX '!*.@(svg)'"]
        case "zsh": ["_files -g '\\''*.mid *.midi *.kar *.rmi *.smf'\\''", "_files -g '\\''*.sf2 *.sf3'\\''", "_files -g '\\''*.svg'\\''"]
        default: [#"set -l exts \'mid\' \'midi\' \'kar\' \'rmi\' \'smf\'"#, #"set -l exts \'sf2\' \'sf3\'"#, #"*.\'svg\'"#,
                  "__fish_complete_directories"]
        }
        for pattern in patterns { #expect(script.contains(pattern), "\(shell): no '\(pattern)'") }
        if shell == "bash" {
            // Both songs' places: play's argument and render's.
            #expect(script.components(separatedBy: "'!*.@(mid|midi|kar|rmi|smf)'").count - 1 >= 2, "play and render")
        }
    }

    /// bash itself, as a person pressing Tab after `composer-cli play ` gets it: the generated
    /// script sourced into a real bash and its completion function called as readline calls it.
    /// (zsh and fish are not installed here: their scripts are checked as text above.)
    @Test("bash, for real: Tab after 'play ' or 'render ' offers the MIDI files and the folders, not the other files; after 'render --soundfont ' the soundfonts")
    func bashCompletesFiles() async throws {
        let directory = TemporaryDirectory()
        for name in ["song.mid", "take2.midi", "notes.txt", "mix.wav", "piano.sf2"] { directory.write("x", to: name) }
        try FileManager.default.createDirectory(atPath: directory.path + "/drafts", withIntermediateDirectories: false)
        let script = try await ExecutableRun.run("composer-cli", ["--generate-completion-script", "bash"]).standardOutput
        directory.write(script, to: "completion.bash")
        // COMP_* as readline sets them; the function prints what it offers, one a line, sorted.
        let complete = #"""
            shopt -s extglob; source ./completion.bash
            offer() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
                      COMPREPLY=(); _composer-cli composer-cli "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                      printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '; echo; }
            offer composer-cli play ""
            offer composer-cli render ""
            offer composer-cli render song.mid --soundfont ""
            """#
        let run = try await ExecutableRun.run(program: "/bin/bash", ["-c", "cd \"$0\" && eval \"$1\"", directory.path, complete])
        #expect(run.status == 0, "\(run.standardError)")
        let offers = run.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(offers.count >= 3, "\(run.standardOutput)\n\(run.standardError)")
        #expect(offers.first == "drafts song.mid take2.midi", "after 'play ': \(run.standardOutput)")
        #expect(offers.dropFirst().first == "drafts song.mid take2.midi", "after 'render ': \(run.standardOutput)")
        #expect(offers.dropFirst(2).first == "drafts piano.sf2", "after '--soundfont ': \(run.standardOutput)")
    }

    /// With `--json` a script reads errors as JSON too: one line on stderr,
    /// `{"error":{"code":…,"message":…}}`, whatever failed (composer-cli itself, the bus, the daemon).
    @Test("with --json, errors are one line of JSON on stderr with a stable code and the message", arguments: [
        (["play", "/nonexistent/song.mid", "--json"], "local", "cannot open /nonexistent/song.mid: "),
        (["status", "--json", "--bus", "unix:path=/nonexistent/bus"], "unreachable", "cannot reach speakerd on the "),
        (["volume", "loud", "--json"], "usage", ""),
    ])
    func jsonErrors(arguments: [String], code: String, messagePrefix: String) async throws {
        let run = try await ExecutableRun.run("composer-cli", arguments)
        #expect(run.status != 0)
        #expect(run.standardOutput.isEmpty, "\(run.standardOutput)")
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(run.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.standardError.utf8)) as? [String: Any],
                                  "not JSON: \(run.standardError)")
        #expect(Set(object.keys) == ["error"])
        let error = try #require(object["error"] as? [String: String], "\(run.standardError)")
        #expect(Set(error.keys) == ["code", "message"])
        #expect(error["code"] == code, "\(run.standardError)")
        #expect(error["message"]?.hasPrefix(messagePrefix) == true && error["message"]?.isEmpty == false, "\(run.standardError)")
        // Without --json the same failure is the plain line.
        let plain = try await ExecutableRun.run("composer-cli", arguments.filter { $0 != "--json" })
        #expect(plain.standardError.hasPrefix("composer-cli: "), "\(plain.standardError)")
    }

    @Test("play of a file that cannot be opened says so in one line")
    func playMissingFile() async throws {
        let directory = TemporaryDirectory()
        let run = try await ExecutableRun.run("composer-cli", ["play", directory.path + "/missing.mid"])
        #expect(run.status == 1)
        #expect(run.standardError.hasPrefix("composer-cli: cannot open \(directory.path)/missing.mid: "))
        #expect(run.standardError.filter { $0 == "\n" }.count == 1)
    }

    @Test("speakerd refuses bad flags and config with one line and the right exit status")
    func speakerdFailures() async throws {
        let badFlag = try await ExecutableRun.run("speakerd", ["--audio-output", "speaker"])
        #expect(badFlag.status == 64)
        #expect(badFlag.standardError == "speakerd: --audio-output: bad value 'speaker' (expected auto, alsa:DEVICE, pulseaudio, file:PATH or null)\n")
        // speakerd runs in /: a relative WAV path is refused before it lands somewhere surprising.
        let relative = try await ExecutableRun.run("speakerd", ["--audio-output", "file:song.wav"])
        #expect(relative.status == 64)
        #expect(relative.standardError == "speakerd: --audio-output: bad value 'file:song.wav' (expected an absolute path after file:, as speakerd runs in /)\n")
        let directory = TemporaryDirectory()
        directory.write("auto_pick = yes\nvolume = 11\n", to: "speakerd.conf")
        let badConfig = try await ExecutableRun.run("speakerd", ["--config", directory.path + "/speakerd.conf"])
        #expect(badConfig.status == 78)
        #expect(badConfig.standardError.hasPrefix("speakerd: \(directory.path)/speakerd.conf:2: unknown key 'volume'"))
        #expect(badConfig.standardError.filter { $0 == "\n" }.count == 1)
    }

    @Test("a FIFO or a directory in place of the config file is refused at once with its kind; a symbolic link to a config file is followed")
    func configThatIsNotAFile() async throws {
        let directory = TemporaryDirectory()
        #expect(mkfifo(directory.path + "/fifo.conf", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: directory.path + "/dir.conf", withIntermediateDirectories: false)
        // A FIFO nobody writes to used to stop speakerd in open(2), before it was on the bus,
        // deaf to SIGTERM: the run's own time limit would end this test with a failure.
        for (name, kind) in [("fifo.conf", "a named pipe (FIFO)"), ("dir.conf", "a directory")] {
            let run = try await ExecutableRun.run("speakerd", ["--config", directory.path + "/" + name,
                                                               "--state-dir", directory.path, "--bus", "unix:path=\(directory.path)/no-bus"])
            #expect(run.status == 78, "\(name): \(run.standardError)")
            #expect(run.standardError == "speakerd: cannot read config file \(directory.path)/\(name): it is \(kind), not a regular file\n")
        }
        // Configuration linked into place is normal: the link is followed to the real file.
        directory.write("auto_pick = yes\nvolume = 11\n", to: "real.conf")
        #expect(symlink(directory.path + "/real.conf", directory.path + "/linked.conf") == 0)
        let linked = try await ExecutableRun.run("speakerd", ["--config", directory.path + "/linked.conf"])
        #expect(linked.status == 78)
        #expect(linked.standardError.hasPrefix("speakerd: \(directory.path)/linked.conf:2: unknown key 'volume'"), "\(linked.standardError)")
    }

    @Test("doctor reports local facts as JSON and exits non-zero on a problem")
    func doctorJSON() async throws {
        let directory = TemporaryDirectory()
        let run = try await ExecutableRun.run("composer-cli", ["doctor", "--json", "--state-dir", directory.path,
                                                         "--bus", "unix:path=\(directory.path)/no-bus"])
        #expect(run.status == 1)
        #expect(run.standardOutput.contains("\"name\" : \"bus\""))
        #expect(run.standardOutput.contains("\"healthy\" : false"))
        // With --json the failure line is JSON too (the report itself is on stdout).
        #expect(run.standardError.hasPrefix(#"{"error":{"code":"local","message":"doctor found "#), "\(run.standardError)")
        let plain = try await ExecutableRun.run("composer-cli", ["doctor", "--state-dir", directory.path, "--bus", "unix:path=\(directory.path)/no-bus"])
        #expect(plain.standardError.hasPrefix("composer-cli: doctor found "))
    }
}

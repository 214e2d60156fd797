@testable import AsyncSignals
import Foundation
@testable import Playback
import TestSupport
import Testing

/// The one spawner every test's helper program (pulseaudio, parec, speakerd, the fake bus) starts through.
@Suite("Spawned helper processes")
struct SpawnedProcessTests {
    @Test("a program's exit status is what it exited with, for every waiter")
    func exitStatus() async throws {
        let shell = try SpawnedProcess.spawn("/bin/sh", ["-c", "exit 3"])
        #expect(await shell.exitStatus() == 3)
        #expect(await shell.exitStatus() == 3)
        shell.signal(SIGKILL)  // already reaped: nothing to kill, and no other process's pid
    }

    @Test("a program killed by SIGTERM reports 128 + 15")
    func killedBySignal() async throws {
        let sleeper = try SpawnedProcess.spawn("/bin/sleep", ["30"])
        sleeper.signal(SIGTERM)
        #expect(await sleeper.exitStatus() == 128 + SIGTERM)
    }

    @Test("standard output and error go to the files asked for, in the environment given")
    func outputToFiles() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out").path, err = directory.appendingPathComponent("err").path
        let shell = try SpawnedProcess.spawn("/bin/sh", ["-c", "echo \"said $WORD\"; echo complained >&2"],
                                             environment: ["WORD": "hello"],
                                             standardOutput: .file(out), standardError: .file(err))
        #expect(await shell.exitStatus() == 0)
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "said hello\n")
        #expect(try String(contentsOfFile: err, encoding: .utf8) == "complained\n")
    }

    @Test("through pipes, what goes in comes back out, and closing our end is the child's EOF")
    func pipes() async throws {
        let cat = try SpawnedProcess.spawn("/bin/cat", [], standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(cat.standardInputPipe), output = try #require(cat.standardOutputPipe)
        defer { close(output) }
        let bytes = Array("round trip\n".utf8)
        #expect(write(input, bytes, bytes.count) == bytes.count)
        close(input)
        var received: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 256)
        while case let count = read(output, &buffer, buffer.count), count > 0 { received += buffer[0..<count] }
        #expect(String(decoding: received, as: UTF8.self) == "round trip\n")
        #expect(await cat.exitStatus() == 0)
    }

    @Test("a missing program is a SpawnError that names it and says why")
    func missingProgram() {
        #expect {
            _ = try SpawnedProcess.spawn("/nonexistent/speakerd-helper", [])
        } throws: { error in
            guard let error = error as? SpawnError else { return false }
            return error.reason == .cannotRun(errno: ENOENT)
                && error.description.contains("cannot run /nonexistent/speakerd-helper: No such file or directory")
        }
    }

    @Test("the child starts with no blocked signals, even when spawned from a thread that blocks some")
    func emptySignalMask() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("status").path
        let spawned: Result<SpawnedProcess, SpawnError> = await withCheckedContinuation { continuation in
            DetachedThread.start(name: "blocked-spawner") {
                var blocked = sigset_t()
                sigemptyset(&blocked)
                for signal in [SIGINT, SIGTERM, SIGUSR1] { sigaddset(&blocked, signal) }
                pthread_sigmask(SIG_BLOCK, &blocked, nil)
                continuation.resume(returning: Result { () throws(SpawnError) in
                    try SpawnedProcess.spawn("/bin/sh", ["-c", "grep SigBlk /proc/self/status"], standardOutput: .file(out))
                })
            }
        }
        let shell = try spawned.get()
        #expect(await shell.exitStatus() == 0)
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "SigBlk:\t0000000000000000\n")
    }
}

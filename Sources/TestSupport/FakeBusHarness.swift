import Foundation
import Synchronization

/// The `scripts/fake-bluez` process: its stdin (commands; closing it tears the world down)
/// and its stdout (the address, then one answer per command), read without blocking a task.
final class FakeBusHarness: Sendable {
    private struct Lines {
        var buffered: [String] = []
        var partial = Data()
        var waiting: [CheckedContinuation<String?, Never>] = []
        var ended = false
    }

    private let process: SendableBox<Process>
    private let input: FileHandle
    private let output: FileHandle
    private let errors: FileHandle
    private let lines = Mutex(Lines())
    private let errorText = Mutex(Data())
    /// Serialises commands so each answer is read by the command that asked.
    private let commandLock = AsyncSerialLock()

    init(script: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        self.process = SendableBox(process)
        input = stdin.fileHandleForWriting
        output = stdout.fileHandleForReading
        errors = stderr.fileHandleForReading
        output.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            self?.receive(data)
        }
        errors.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            self?.errorText.withLock { $0.append(data); if $0.count > 8192 { $0.removeFirst($0.count - 8192) } }
        }
        try process.run()
    }

    private func receive(_ data: Data) {
        let resumptions = lines.withLock { state -> [(CheckedContinuation<String?, Never>, String?)] in
            if data.isEmpty {
                state.ended = true
            } else {
                state.partial.append(data)
                while let newline = state.partial.firstIndex(of: UInt8(ascii: "\n")) {
                    state.buffered.append(String(decoding: state.partial[state.partial.startIndex..<newline], as: UTF8.self))
                    state.partial.removeSubrange(state.partial.startIndex...newline)
                }
            }
            var result: [(CheckedContinuation<String?, Never>, String?)] = []
            while !state.waiting.isEmpty, !state.buffered.isEmpty {
                result.append((state.waiting.removeFirst(), state.buffered.removeFirst()))
            }
            if state.ended {
                result += state.waiting.map { ($0, nil) }
                state.waiting = []
            }
            return result
        }
        for (continuation, line) in resumptions { continuation.resume(returning: line) }
    }

    /// The next line of stdout, or nil once the script has exited.
    func nextLine() async -> String? {
        await withCheckedContinuation { continuation in
            let ready = lines.withLock { state -> String?? in
                if !state.buffered.isEmpty { return .some(state.buffered.removeFirst()) }
                if state.ended { return .some(nil) }
                state.waiting.append(continuation)
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Sends one command line and returns the script's one-line answer.
    func send(_ command: String) async -> String? {
        await commandLock.run {
            do { try input.write(contentsOf: Data((command + "\n").utf8)) } catch { return nil }
            return await nextLine()
        }
    }

    func standardErrorTail() -> String {
        String(decoding: errorText.withLock { $0 }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Closes stdin (the script then tears down everything) without waiting.
    func terminate() {
        try? input.close()
    }

    /// Closes stdin and waits for the script (and so the bus and mock) to be gone.
    func stop() async {
        terminate()
        while await nextLine() != nil {}
        let process = self.process
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                process.value.waitUntilExit()
                continuation.resume()
            }
        }
    }
}

/// Foundation's `Process` is not Sendable; it is only started once and waited on here.
final class SendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A FIFO async lock: one command at a time talks to the script.
actor AsyncSerialLock {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func run<T: Sendable>(_ body: @Sendable () async -> T) async -> T {
        if busy {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            busy = true
        }
        let result = await body()
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
        return result
    }
}

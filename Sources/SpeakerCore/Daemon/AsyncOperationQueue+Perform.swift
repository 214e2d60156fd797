import Readiness

extension AsyncOperationQueue {
    /// Runs `work` as a speaker operation and waits for it: cancelling the caller cancels it,
    /// its timeout ends it, a failure is rethrown with its reason.
    func perform(_ name: String, group: String, timeout: Duration, _ work: @escaping @Sendable () async throws -> Void) async throws {
        let ticket = add(name, group: group, timeout: timeout) { _ in try await work() }
        let outcome = try await withTaskCancellationHandler { try await ticket.outcome() } onCancel: {
            Task { await self.cancel(ticket.id) }
        }
        switch outcome {
        case .ok: return
        case .failed(let reason), .skipped(let reason): throw SpeakerOperationFailure(operation: name, reason: reason)
        case .timedOut: throw SpeakerOperationFailure(operation: name, reason: "timed out after \(timeout)")
        case .cancelled: throw CancellationError()
        }
    }
}

/// A speaker operation that did not finish well.
struct SpeakerOperationFailure: Error, CustomStringConvertible {
    let operation: String
    let reason: String
    var description: String { "\(operation) failed: \(reason)" }
}

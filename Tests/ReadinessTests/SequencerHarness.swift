@testable import AsyncSignals
import AsyncSignals
import Clocks
@testable import Readiness
import Synchronization
import TestSupport
import Testing

/// Start-up operations whose ends the test decides: each body records that it started, then
/// waits until the test finishes, fails or aborts it (or it is cancelled).
final class ScriptedOperations: Sendable {
    enum Ending: Sendable {
        case succeed
        case fail(String)
        case abort(String)
    }

    private struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let endings = Mutex<[String: OneShotSignal<Ending, Never>]>([:])
    let journal = Journal()

    private func signal(_ name: String) -> OneShotSignal<Ending, Never> {
        endings.withLock { endings in
            if let signal = endings[name] { return signal }
            let signal = OneShotSignal<Ending, Never>()
            endings[name] = signal
            return signal
        }
    }

    /// A body for `name`: records "start" and then "cancelled" if its task is cancelled.
    func body(_ name: String) -> StartupOperation.Body {
        { [self] context in
            journal.record("start \(name)")
            let ending: Ending
            do {
                ending = try await signal(name).result().get()
            } catch {
                journal.record("cancelled \(name)")
                throw CancellationError()
            }
            switch ending {
            case .succeed: return
            case let .fail(reason): throw Failure(description: reason)
            case let .abort(reason): throw context.abort(reason)
            }
        }
    }

    func bodies(for scenario: StartupScenario) -> [String: StartupOperation.Body] {
        Dictionary(uniqueKeysWithValues: scenario.steps.map { ($0.name, body($0.name)) })
    }

    func end(_ name: String, _ ending: Ending = .succeed) { signal(name).succeed(ending) }
}

/// Reads sequencer events until `event` arrives, returning everything seen on the way.
@discardableResult
func readEvents(
    until event: StartupEvent,
    from iterator: inout AsyncStream<StartupEvent>.Iterator,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> [StartupEvent] {
    var seen: [StartupEvent] = []
    while let next = await iterator.next() {
        seen.append(next)
        if next == event { return seen }
    }
    Issue.record("the sequence ended before \(event); saw \(seen)", sourceLocation: sourceLocation)
    return seen
}

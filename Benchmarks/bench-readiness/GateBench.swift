import Readiness
import SpeakerdAPI

/// Registrations + release: `count` blocks registered before the level is reached, then one
/// raise runs them all in order. Then `count` more registered after (the run-now path).
///
/// The levels are the daemon's own (`DaemonReadiness`, from SpeakerdAPI), so the figure is the
/// daemon's case: the gate's code from one module, specialised in another (here, as in Daemon)
/// for a level type from a third.
struct GateBench {
    let count: Int
    let runs: Int

    struct Result {
        let gate: Sample
        let baseline: Sample
        let bare: Sample
    }

    func deferred() -> Result {
        var gate: [Sample] = [], baseline: [Sample] = [], bare: [Sample] = []
        for round in 0...runs {  // round 0 warms up; the three alternate so noise hits all alike
            let g = measure {
                let counter = Counter()
                let readiness = ReadinessGate(initial: DaemonReadiness.started)
                for _ in 0..<count { readiness.runNowOrWhen(.playbackReady) { counter.value &+= 1 } }
                readiness.raise(to: .playbackReady)
                precondition(counter.value == count)
            }
            let b = measure {
                let counter = Counter()
                let readiness = DispatchReadinessBaseline()
                for _ in 0..<count {
                    readiness.runNowOrWhenReady(label: "\(#fileID):\(#line)") { counter.value &+= 1 }
                }
                readiness.setReady()
                precondition(counter.value == count)
            }
            let r = measure {
                let counter = Counter()
                let readiness = BareDispatchBaseline()
                for _ in 0..<count { readiness.runNowOrWhenReady { counter.value &+= 1 } }
                readiness.setReady()
                precondition(counter.value == count)
            }
            if round > 0 { gate.append(g); baseline.append(b); bare.append(r) }
        }
        return Result(gate: medians(gate), baseline: medians(baseline), bare: medians(bare))
    }

    /// The deferred case with `Int` levels, to show what another level type costs. Until the
    /// gate's hot paths were `@inlinable` only `DaemonReadiness` had exported specialisations, and
    /// this ran the unspecialised generic code.
    func deferredGeneric() -> Result {
        var gate: [Sample] = [], baseline: [Sample] = [], bare: [Sample] = []
        for round in 0...runs {
            let g = measure {
                let counter = Counter()
                let readiness = ReadinessGate(initial: 0)
                for _ in 0..<count { readiness.runNowOrWhen(4) { counter.value &+= 1 } }
                readiness.raise(to: 4)
                precondition(counter.value == count)
            }
            let b = measure {
                let counter = Counter()
                let readiness = DispatchReadinessBaseline()
                for _ in 0..<count {
                    readiness.runNowOrWhenReady(label: "\(#fileID):\(#line)") { counter.value &+= 1 }
                }
                readiness.setReady()
                precondition(counter.value == count)
            }
            let r = measure {
                let counter = Counter()
                let readiness = BareDispatchBaseline()
                for _ in 0..<count { readiness.runNowOrWhenReady { counter.value &+= 1 } }
                readiness.setReady()
                precondition(counter.value == count)
            }
            if round > 0 { gate.append(g); baseline.append(b); bare.append(r) }
        }
        return Result(gate: medians(gate), baseline: medians(baseline), bare: medians(bare))
    }

    func immediate() -> Result {
        var gate: [Sample] = [], baseline: [Sample] = [], bare: [Sample] = []
        let readiness = ReadinessGate(initial: DaemonReadiness.playbackReady)
        let dispatchReadiness = DispatchReadinessBaseline()
        dispatchReadiness.setReady()
        let bareReadiness = BareDispatchBaseline()
        bareReadiness.setReady()
        for round in 0...runs {
            let counter = Counter()
            let g = measure { for _ in 0..<count { readiness.runNowOrWhen(.speakerConnected) { counter.value &+= 1 } } }
            let b = measure {
                for _ in 0..<count {
                    dispatchReadiness.runNowOrWhenReady(label: "\(#fileID):\(#line)") { counter.value &+= 1 }
                }
            }
            let r = measure { for _ in 0..<count { bareReadiness.runNowOrWhenReady { counter.value &+= 1 } } }
            precondition(counter.value == 3 * count)
            if round > 0 { gate.append(g); baseline.append(b); bare.append(r) }
        }
        return Result(gate: medians(gate), baseline: medians(baseline), bare: medians(bare))
    }
}

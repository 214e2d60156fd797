import AsyncSignals
import AudioPath
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BlueZ
import PlaybackService

/// Following the speaker link and the audio path to it, and remembering connected speakers.
extension SpeakerdDaemon {
    /// The link's owner reports a change: readiness follows it, whoever asked for what.
    func linkChanged(_ snapshot: LinkSnapshot) async {
        let previous = inputs.link
        guard snapshot.revision > previous.revision else { return }  // a late report of an older state
        let target = snapshot.target
        let cameUp = snapshot.connected && !(previous.connected && previous.target?.address == target?.address)
        // Said before what follows from it (ready to play), as it happened. The input and the
        // link count change before anything here suspends, so a newer report handled meanwhile is
        // never overwritten by this one, and what runs meanwhile (the audio path's report arming
        // the profile timer) already counts this link.
        if cameUp {
            let reconnect = linkHistory.cameUp(to: target)
            if let target {
                if reconnect {
                    logger.info("reconnected to \(target.name) (\(target.address))")
                } else {
                    logger.info("connected to \(target.name) (\(target.address)), \(target.why.spoken)")
                }
            }
        }
        await update(.link(snapshot))
        if let audioPath = features.audioPath, await audioPath.target.map(Followed.init) != target.map(Followed.init) {
            await followAudioPath(to: target, waitForFirst: false)
        }
        await observeSpeaker()
        if cameUp, let target {
            // Whether it is new decides its first volume; the care hears of it after the write,
            // so a speaker's first link finds it known, to keep its first volume.
            let link = linkHistory.linkUps
            let isNew = await features.stateFile.recordConnection(to: target.address, name: target.name, at: dependencies.now())
            let volume = await features.stateFile.knownSpeakers.first { $0.address == target.address }?.volume
            await features.speakerCare.remembered(target.address, isNew: isNew, volume: volume, onLink: link)
            await publish()
        }
    }

    /// Starts following the audio path to `target` (replacing any earlier follow). With
    /// `waitForFirst`, returns once its first state has been taken in (the start-up step's check).
    func followAudioPath(to target: LinkSnapshot.Target?, waitForFirst: Bool) async {
        guard let audioPath = features.audioPath else { return }
        let subscription = audioPath.numberFollow()
        guard !isWindingDown else { return }
        guard let first = await audioPath.follow(target, over: await features.bus.connection, as: subscription) else { return }
        // What was seen of the old target's path no longer holds until the new follower says,
        // except a problem with the output or the sound server itself: it is no less true for
        // another speaker, and hiding it (status flickering to "Connecting…") would let a `play`
        // wait instead of failing at once.
        if !inputs.audioPath.holdsForAnySpeaker { await update(.audioPath(.unknown)) }
        if waitForFirst { _ = try? await first.result() }
    }
}

/// A followed speaker as the audio path tells targets apart: by address and name.
private struct Followed: Equatable {
    let address: BluetoothAddress
    let name: String
    init(_ target: LinkSnapshot.Target) { (address, name) = (target.address, target.name) }
}

extension LinkSnapshot.Why {
    /// For the log line: why this speaker was connected.
    var spoken: String {
        switch self {
        case .lastKnown: "the last known speaker"
        case .otherKnown: "another known speaker"
        case .userPick: "as you asked"
        case .autoPick: "picked by scan (auto_pick)"
        case .inbound: "it connected by itself"
        }
    }
}

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
    /// The link's owner reports a change: the core judges it (readiness follows it, whoever
    /// asked for what), with the speaker whose audio path is followed now.
    func linkChanged(_ snapshot: LinkSnapshot) async {
        let followed: LinkSnapshot.Target?? = if let audioPath = features.audioPath { .some(await audioPath.target) } else { nil }
        await run(.linkChanged(snapshot, followed: followed))
    }

    /// Starts following the audio path to `target` (replacing any earlier follow). With
    /// `waitForFirst`, returns once its first state has been taken in (the start-up step's check).
    func followAudioPath(to target: LinkSnapshot.Target?, waitForFirst: Bool) async {
        guard let audioPath = features.audioPath else { return }
        let subscription = audioPath.numberFollow()
        guard !isWindingDown else { return }
        guard let first = await audioPath.follow(target, over: await features.bus.connection, as: subscription) else { return }
        await run(.pathFollowed)
        if waitForFirst { _ = try? await first.result() }
    }
}

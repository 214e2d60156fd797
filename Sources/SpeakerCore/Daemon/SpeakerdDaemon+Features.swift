import PlaybackService
/// The features' reports, taken in (see ``DaemonFeatures``): each is an observation, and what
/// follows from it is decided here.
extension SpeakerdDaemon {
    /// The reducer's one entry for the features' reports (see ``FeatureInbox``).
    func receive(_ report: FeatureReport) async {
        switch report {
        case .audioPath(let state, let subscription):
            await run(.audioPath(state, latest: features.audioPath?.isLatest(subscription) == true))
        case .statusChanged:
            await run(.statusChanged)
        case .systemSleep(let starting):
            await run(.systemSleep(starting: starting))
        case .busLost:
            await run(.busLost)
        case .bluez(let event):
            await handle(event)
        case .playback(let snapshot):
            await run(.playback(snapshot))
        }
    }

    /// Tells the speaker's care what is observed now (its profile timer and volume restore
    /// follow from it).
    func observeSpeaker() async {
        guard !isWindingDown else { return }
        await features.speakerCare.observe(core.speakerObservation)
    }
}

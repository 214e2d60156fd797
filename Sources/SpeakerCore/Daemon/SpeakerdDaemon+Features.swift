import PlaybackService
/// The features' reports, taken in (see ``DaemonFeatures``): each is an observation, and what
/// follows from it is decided here.
extension SpeakerdDaemon {
    /// The reducer's one entry for the features' reports (see ``FeatureInbox``).
    func receive(_ report: FeatureReport) async {
        switch report {
        case .audioPath(let state, let subscription):
            // A late report of a follow since replaced says nothing of the path followed now.
            guard features.audioPath?.isLatest(subscription) == true else { return }
            await update(.audioPath(state))
            await observeSpeaker()
        case .statusChanged:
            await publish()
        case .systemSleep(let starting):
            await systemSleep(starting: starting)
        case .busLost:
            busWasLost()
        case .bluez(let event):
            await handle(event)
        case .playback(let snapshot):
            await playbackChanged(snapshot)
        }
    }

    /// Tells the speaker's care what is observed now (its profile timer and volume restore
    /// follow from it).
    func observeSpeaker() async {
        guard !isWindingDown else { return }
        await features.speakerCare.observe(.init(target: inputs.link.target, connected: inputs.link.connected,
                                                 audioPath: inputs.audioPath, link: linkHistory.linkUps))
    }
}

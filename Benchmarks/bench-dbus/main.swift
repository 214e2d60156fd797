import SpeakerCore
print("not yet written")

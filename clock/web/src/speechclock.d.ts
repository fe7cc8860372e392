// Types of speech-clock's page clock: speechclock.mjs (as speechclock.d.mts) and speechclock.cjs (as
// speechclock.d.cts), built from clock/web/src/speechclock.d.ts. The classic script (speechclock.js) sets
// window.SpeechClock; a page that loads it and wants its types declares it:
//

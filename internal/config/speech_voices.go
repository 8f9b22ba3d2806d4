package config

// speechVoiceDefaults is the speech voice menu (media.speech.voices). Each
// voice is a distinct espeak-ng voice, variant, pitch and rate, so no two
// menu entries sound alike on the local renderer; every espeak voice and
// variant named here ships with Debian's espeak-ng-data (check with
// `espeak-ng --voices` and `espeak-ng --voices=variant`). Text is read in
// the voice's language, so a buyer picks the voice for the language of the
// text. The premium voices (price_multiplier) are the slower, more
// deliberate narrators.
var speechVoiceDefaults = []map[string]any{
	// English (US)
	{"id": "aria", "description": "warm female US English narrator", "default": true, "language": "en-US", "espeak": "en-us", "variant": "f2", "pitch": 55, "rate": 165},
	{"id": "roger", "description": "deep, calm male US English narrator", "language": "en-US", "espeak": "en-us", "variant": "m3", "pitch": 38, "rate": 160},
	{"id": "sarah", "description": "bright, friendly female US English voice", "language": "en-US", "espeak": "en-us", "variant": "f4", "pitch": 62, "rate": 175},
	{"id": "brian", "description": "mature male US English newsreader", "language": "en-US", "espeak": "en-us", "variant": "m1", "pitch": 45, "rate": 170},
	{"id": "chris", "description": "energetic young male US English presenter", "language": "en-US", "espeak": "en-us", "variant": "m7", "pitch": 52, "rate": 185},
	{"id": "jessica", "description": "lively female New York English voice", "language": "en-US", "espeak": "en-us-nyc", "variant": "f3", "pitch": 58, "rate": 180},
	{"id": "grace", "description": "soft-spoken female US English storyteller", "price_multiplier": "1.5", "language": "en-US", "espeak": "en-us", "variant": "f5", "pitch": 50, "rate": 150},
	// English (GB)
	{"id": "george", "description": "refined male British narrator (received pronunciation)", "price_multiplier": "2", "language": "en-GB", "espeak": "en-gb-x-rp", "variant": "m2", "pitch": 42, "rate": 155},
	{"id": "lily", "description": "gentle female British narrator (received pronunciation)", "price_multiplier": "1.5", "language": "en-GB", "espeak": "en-gb-x-rp", "variant": "f2", "pitch": 60, "rate": 158},
	{"id": "charlotte", "description": "mature female British English voice", "language": "en-GB", "espeak": "en-gb", "variant": "f1", "pitch": 57, "rate": 165},
	{"id": "daniel", "description": "authoritative male British English voice", "language": "en-GB", "espeak": "en-gb", "variant": "m4", "pitch": 36, "rate": 168},
	{"id": "callum", "description": "male Scottish English voice", "language": "en-GB", "espeak": "en-gb-scotland", "variant": "m5", "pitch": 46, "rate": 170},
	{"id": "freya", "description": "cheerful female West Midlands English voice", "language": "en-GB", "espeak": "en-gb-x-gbcwmd", "variant": "f3", "pitch": 64, "rate": 172},
	// German
	{"id": "lena", "description": "clear female German voice", "language": "de-DE", "espeak": "de", "variant": "f2", "pitch": 56, "rate": 160},
	{"id": "jonas", "description": "calm male German narrator", "price_multiplier": "1.5", "language": "de-DE", "espeak": "de", "variant": "m3", "pitch": 42, "rate": 155},
	// French
	{"id": "camille", "description": "elegant female French voice", "language": "fr-FR", "espeak": "fr-fr", "variant": "f4", "pitch": 58, "rate": 165},
	{"id": "louis", "description": "warm male French voice", "language": "fr-FR", "espeak": "fr-fr", "variant": "m2", "pitch": 43, "rate": 160},
	// Spanish
	{"id": "lucia", "description": "friendly female Spanish (Spain) voice", "language": "es-ES", "espeak": "es", "variant": "f3", "pitch": 57, "rate": 170},
	{"id": "mateo", "description": "relaxed male Latin American Spanish voice", "language": "es-419", "espeak": "es-419", "variant": "m3", "pitch": 45, "rate": 168},
	// Italian
	{"id": "giulia", "description": "expressive female Italian voice", "language": "it-IT", "espeak": "it", "variant": "f2", "pitch": 60, "rate": 165},
	{"id": "marco", "description": "resonant male Italian voice", "language": "it-IT", "espeak": "it", "variant": "m6", "pitch": 44, "rate": 163},
	// Portuguese
	{"id": "ines", "description": "soft female European Portuguese voice", "language": "pt-PT", "espeak": "pt", "variant": "f5", "pitch": 55, "rate": 160},
	{"id": "thiago", "description": "upbeat male Brazilian Portuguese voice", "language": "pt-BR", "espeak": "pt-br", "variant": "m4", "pitch": 47, "rate": 172},
	// Dutch, Polish, Scandinavian, Finnish, Czech
	{"id": "sanne", "description": "bright female Dutch voice", "language": "nl-NL", "espeak": "nl", "variant": "f3", "pitch": 59, "rate": 165},
	{"id": "kasia", "description": "clear female Polish voice", "language": "pl-PL", "espeak": "pl", "variant": "f4", "pitch": 58, "rate": 160},
	{"id": "piotr", "description": "steady male Polish voice", "language": "pl-PL", "espeak": "pl", "variant": "m2", "pitch": 41, "rate": 158},
	{"id": "astrid", "description": "gentle female Swedish voice", "language": "sv-SE", "espeak": "sv", "variant": "f2", "pitch": 57, "rate": 160},
	{"id": "ingrid", "description": "clear female Norwegian voice", "language": "nb-NO", "espeak": "nb", "variant": "f5", "pitch": 58, "rate": 162},
	{"id": "mads", "description": "easygoing male Danish voice", "language": "da-DK", "espeak": "da", "variant": "m2", "pitch": 45, "rate": 162},
	{"id": "aino", "description": "calm female Finnish voice", "language": "fi-FI", "espeak": "fi", "variant": "f4", "pitch": 56, "rate": 158},
	{"id": "tomas", "description": "friendly male Czech voice", "language": "cs-CZ", "espeak": "cs", "variant": "m4", "pitch": 46, "rate": 165},
	// Eastern Europe, Greece, Turkey
	{"id": "dmitri", "description": "low male Russian narrator", "price_multiplier": "1.5", "language": "ru-RU", "espeak": "ru", "variant": "m3", "pitch": 37, "rate": 152},
	{"id": "oksana", "description": "warm female Ukrainian voice", "language": "uk-UA", "espeak": "uk", "variant": "f3", "pitch": 57, "rate": 160},
	{"id": "andrei", "description": "clear male Romanian voice", "language": "ro-RO", "espeak": "ro", "variant": "m5", "pitch": 44, "rate": 165},
	{"id": "zsofia", "description": "lively female Hungarian voice", "language": "hu-HU", "espeak": "hu", "variant": "f3", "pitch": 60, "rate": 166},
	{"id": "eleni", "description": "melodic female Greek voice", "language": "el-GR", "espeak": "el", "variant": "f2", "pitch": 56, "rate": 160},
	{"id": "emre", "description": "confident male Turkish voice", "language": "tr-TR", "espeak": "tr", "variant": "m2", "pitch": 46, "rate": 165},
	// Asia and the Middle East
	{"id": "priya", "description": "warm female Hindi voice", "language": "hi-IN", "espeak": "hi", "variant": "f2", "pitch": 58, "rate": 155},
	{"id": "arjun", "description": "steady male Hindi voice", "language": "hi-IN", "espeak": "hi", "variant": "m3", "pitch": 44, "rate": 155},
	{"id": "kavya", "description": "gentle female Tamil voice", "language": "ta-IN", "espeak": "ta", "variant": "f4", "pitch": 57, "rate": 150},
	{"id": "yuki", "description": "bright female Japanese voice (reads kana; kanji are not supported)", "language": "ja-JP", "espeak": "ja", "variant": "f3", "pitch": 62, "rate": 160},
	{"id": "jiwoo", "description": "friendly female Korean voice", "language": "ko-KR", "espeak": "ko", "variant": "f4", "pitch": 59, "rate": 160},
	{"id": "linh", "description": "soft female Vietnamese voice", "language": "vi-VN", "espeak": "vi", "variant": "f2", "pitch": 56, "rate": 155},
	{"id": "putri", "description": "cheerful female Indonesian voice", "language": "id-ID", "espeak": "id", "variant": "f5", "pitch": 57, "rate": 165},
	{"id": "omar", "description": "deep male Arabic voice", "language": "ar", "espeak": "ar", "variant": "m1", "pitch": 40, "rate": 150},
}

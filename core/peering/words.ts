// Words for generated cluster names (adjective-noun, like the names liqoctl install generates).
// Short, neutral and lowercase, so a generated name is always a valid cluster name.
export const ADJECTIVES = [
  "amber", "ancient", "autumn", "bold", "brave", "bright", "calm", "clever", "cool", "crimson",
  "curly", "damp", "dark", "dawn", "deep", "dry", "eager", "early", "fancy", "fast",
  "fierce", "floral", "fragrant", "frosty", "gentle", "gifted", "golden", "green", "hidden", "holy",
  "icy", "jolly", "keen", "late", "lively", "lucky", "misty", "morning", "muddy", "nameless",
  "noisy", "odd", "old", "orange", "patient", "plain", "polished", "proud", "purple", "quiet",
  "rapid", "red", "restless", "rough", "round", "royal", "rustic", "shy", "silent", "small",
  "snowy", "soft", "solitary", "sparkling", "spring", "still", "summer", "sunny", "swift", "tiny",
  "twilight", "wandering", "warm", "weathered", "white", "wild", "winter", "wispy", "withered", "young",
] as const;

export const NOUNS = [
  "bird", "breeze", "brook", "bush", "butterfly", "cherry", "cloud", "darkness", "dawn", "dew",
  "dream", "dust", "feather", "field", "fire", "firefly", "flower", "fog", "forest", "frog",
  "frost", "glade", "glitter", "grass", "haze", "hill", "lake", "leaf", "meadow", "moon",
  "morning", "mountain", "night", "paper", "pine", "pond", "rain", "resonance", "river", "sea",
  "shadow", "shape", "silence", "sky", "smoke", "snow", "snowflake", "sound", "star", "sun",
  "sunset", "surf", "thunder", "tree", "violet", "voice", "water", "waterfall", "wave", "wildflower",
  "wind", "wood",
] as const;

package eval

import (
	"sort"
	"strings"
	"sync"

	"github.com/brianvoe/gofakeit/v7/data"

	"conduit/internal/redact"
)

// The evaluation's sources are its own: names, streets, cities, domains
// and templates the detector has never seen. The locale lists below were
// written for this package; the English names come from gofakeit's lists
// with every name the detector knows removed. TestDisjoint checks that no
// name here is in the detector's lists.

type locale struct {
	code         string
	first, last  []string
	cities       []string
	streetRoots  []string
	phoneFormats []string // '#' a random digit
}

var locales = []locale{
	{code: "en-US",
		cities:      []string{"Tacoma", "Boise", "Duluth", "Savannah", "Spokane", "Ithaca", "Missoula", "Flagstaff", "Asheville", "Burlington"},
		streetRoots: []string{"Larkspur", "Quail Hollow", "Ashgrove", "Kettle Creek", "Wrenfield", "Marrowbone", "Sagebrush", "Tillman", "Copperleaf", "Hawthorne Ridge"},
		phoneFormats: []string{"(206) 55#-####", "206-55#-####", "312.55#.####", "+1 415 55# ####", "+1-617-55#-####",
			"(503) 2##-####", "646 3##-####"},
	},
	{code: "en-GB",
		first:        []string{"Alfie", "Tamsin", "Rhys", "Imogen", "Ffion", "Callum", "Bronwen", "Hamish", "Morwenna", "Tarquin", "Eilidh", "Ewan", "Saoirse", "Cormac", "Niamh", "Oisin"},
		last:         []string{"Pemberton", "Ashcroft", "Fairweather", "Threlfall", "Cattermole", "Blenkinsop", "Pennington", "Haworth", "Trevelyan", "Quigley", "Featherstone", "Merriweather", "Entwistle", "Ormerod"},
		cities:       []string{"Harrogate", "Keswick", "Truro", "Ludlow", "Whitby", "Penrith", "Stamford", "Totnes"},
		streetRoots:  []string{"Cobble", "Mill Pond", "Bramley", "Foxglove", "Nettlebed", "Wheatsheaf"},
		phoneFormats: []string{"+44 20 7946 0###", "020 7946 0###", "07400 ######", "+44 7400 ######", "0161 496 0###"},
	},
	{code: "de-DE",
		first:        []string{"Hannelore", "Wilfried", "Gerlinde", "Reinhold", "Siegfried", "Waltraud", "Eberhard", "Gudrun", "Lothar", "Irmgard", "Detlef", "Annegret", "Ortwin", "Rosemarie", "Kunigunde", "Volkmar"},
		last:         []string{"Brandstätter", "Kleinschmidt", "Oberhuber", "Pfannkuch", "Tiefenbach", "Wendeborn", "Gottschalk", "Hinterseer", "Lindemann", "Rautenberg", "Schimmelpfennig", "Vogelsang", "Achterberg", "Dreesen"},
		cities:       []string{"Göttingen", "Bamberg", "Lüneburg", "Tübingen", "Konstanz", "Passau", "Wismar", "Weimar"},
		streetRoots:  []string{"Lindenhof", "Kastanien", "Mühlbach", "Eichendorff", "Rosenthaler", "Birken"},
		phoneFormats: []string{"+49 30 ########", "030 ########", "+49 151 ########", "0151 ########", "+49 89 #######"},
	},
	{code: "fr-FR",
		first:        []string{"Gaëtan", "Solène", "Anaïs", "Clotilde", "Éloïse", "Gwenaël", "Maëlys", "Baptiste", "Ghislaine", "Honorine", "Lucienne", "Margaux", "Quentin", "Thibault", "Yannick", "Victorine"},
		last:         []string{"Abadie", "Beaumarchais", "Castagnet", "Delacroix", "Escoffier", "Fauconnier", "Grandjean", "Houdart", "Jacquemin", "Lagarde", "Marchetti", "Poitevin", "Rochefort", "Vasseur"},
		cities:       []string{"Annecy", "Quimper", "Colmar", "Angers", "Perpignan", "Besançon", "Valence", "Niort"},
		streetRoots:  []string{"Tilleuls", "Mimosas", "Glycines", "Peupliers", "Capucines", "Lavandières"},
		phoneFormats: []string{"+33 1 ## ## ## ##", "01 ## ## ## ##", "06 ## ## ## ##", "+33 6 ## ## ## ##"},
	},
	{code: "es-ES",
		first:        []string{"Iñaki", "Begoña", "Ainhoa", "Gorka", "Itziar", "Remedios", "Nieves", "Fulgencio", "Eulalia", "Amparo", "Leocadia", "Saturnino", "Montserrat", "Xabier", "Maite", "Rocío"},
		last:         []string{"Etxeberria", "Zubizarreta", "Olabarría", "Urquijo", "Villalobos", "Cifuentes", "Echeverría", "Barrionuevo", "Montenegro", "Arrieta", "Santamaría", "Valdivieso", "Quintanilla", "Sotomayor"},
		cities:       []string{"Logroño", "Cáceres", "Huesca", "Teruel", "Segovia", "Zamora", "Girona", "Albacete"},
		streetRoots:  []string{"Olivares", "Almendros", "Cigüeñas", "Naranjos", "Alfareros", "Tejedores"},
		phoneFormats: []string{"+34 6## ### ###", "6## ## ## ##", "+34 91 ### ## ##", "91 ### ## ##"},
	},
	{code: "pt-BR",
		first:        []string{"Thiago", "Letícia", "Rodrigo", "Gisele", "Wellington", "Jaqueline", "Cleiton", "Raimunda", "Edivaldo", "Marilene", "Josué", "Luana", "Caetano", "Iracema", "Valdemar", "Rosângela"},
		last:         []string{"Albuquerque", "Bittencourt", "Cavalcanti", "Drummond", "Figueiredo", "Guimarães", "Magalhães", "Nascimento", "Queiroz", "Sampaio", "Vasconcelos", "Teixeira", "Bezerra", "Monteiro"},
		cities:       []string{"Curitiba", "Florianópolis", "Recife", "Belém", "Manaus", "Natal", "Goiânia", "Maceió"},
		streetRoots:  []string{"Ipês", "Jacarandás", "Palmeiras", "Girassóis", "Seringueiras", "Bromélias"},
		phoneFormats: []string{"+55 11 9####-####", "+55 21 9#### ####", "(11) 9####-####"},
	},
	{code: "en-IN",
		first:        []string{"Harshvardhan", "Chaitanya", "Tejaswini", "Mrinalini", "Siddharth", "Dhananjay", "Shreya", "Pranav", "Yashodhara", "Kaustubh", "Revathi", "Gurpreet", "Manpreet", "Abhishek", "Aishwarya", "Vaibhav"},
		last:         []string{"Banerjee", "Chattopadhyay", "Deshpande", "Kulkarni", "Mukherjee", "Naidu", "Pillai", "Raghavan", "Subramaniam", "Venkatesan", "Bhattacharya", "Dasgupta", "Ganguly", "Thakur"},
		cities:       []string{"Pune", "Mysuru", "Kochi", "Indore", "Nagpur", "Coimbatore", "Vadodara", "Jaipur"},
		streetRoots:  []string{"Gulmohar", "Ashoka", "Residency", "Brigade", "Nehru Enclave", "Lakeview"},
		phoneFormats: []string{"+91 98### #####", "+91 97### #####", "+91-80-2### ####"},
	},
	{code: "pl-PL",
		first:        []string{"Grzegorz", "Bożena", "Jadwiga", "Przemysław", "Wiesław", "Stanisława", "Bogusław", "Halina", "Zbigniew", "Urszula", "Mirosław", "Teodora", "Radosław", "Genowefa", "Czesław", "Dobrawa"},
		last:         []string{"Zieliński", "Szymański", "Woźniak", "Dąbrowski", "Kozłowski", "Jankowski", "Mazur", "Krawczyk", "Piotrowski", "Grabowski", "Pawłowski", "Michalski", "Zając", "Wróblewski"},
		cities:       []string{"Toruń", "Lublin", "Rzeszów", "Olsztyn", "Opole", "Kielce", "Białystok", "Gdynia"},
		streetRoots:  []string{"Kwiatowa", "Ogrodowa", "Lipowa", "Słoneczna", "Polna", "Leśna"},
		phoneFormats: []string{"+48 5## ### ###", "+48 6## ### ###", "+48 22 ### ## ##"},
	},
	{code: "ng-NG",
		first:        []string{"Chukwuemeka", "Oluwadamilare", "Temitope", "Nnamdi", "Ifeoma", "Obinna", "Funmilayo", "Babatunde", "Chidinma", "Olumide", "Adaeze", "Ikechukwu", "Yetunde", "Uchenna", "Folasade", "Ebuka"},
		last:         []string{"Okonkwo", "Adebisi", "Nwachukwu", "Ogunleye", "Eze", "Balogun", "Obi", "Onyekachi", "Akintola", "Okoro-Nwosu", "Adeyinka", "Ojukwu", "Babangida", "Oyelaran"},
		cities:       []string{"Ibadan", "Enugu", "Abeokuta", "Owerri", "Kaduna", "Jos", "Calabar", "Onitsha"},
		streetRoots:  []string{"Adeola Odeku", "Awolowo", "Herbert Macaulay", "Ozumba Mbadiwe", "Akin Adesola", "Bode Akinwale"},
		phoneFormats: []string{"+234 803 ### ####", "+234 805 ### ####", "0803 ### ####"},
	},
}

// streetTypes are the structure words of an address (which the detector
// must know), not names.
var streetTypesUS = []string{"Street", "St.", "Avenue", "Ave", "Road", "Rd.", "Lane", "Drive", "Court", "Boulevard", "Way", "Place", "Terrace"}

var domains = []string{"mailbox.test", "postfach.example", "corvid.io", "quillmail.net", "brightlane.org", "example.com",
	"harbourview.co.uk", "tiempo.es", "atelier-nord.fr", "ledgerly.app", "meridian-health.org", "kestrel.dev"}

var enNames = sync.OnceValue(func() [2][]string {
	first, last, _ := redact.NameLists()
	known := map[string]bool{}
	for _, w := range append(first, last...) {
		known[w] = true
	}
	var out [2][]string
	for i, key := range []string{"first", "last"} {
		for _, n := range data.Person[key] {
			if !known[strings.ToLower(n)] && !strings.ContainsAny(n, " ") {
				out[i] = append(out[i], n)
			}
		}
		sort.Strings(out[i])
	}
	return out
})

// Names returns the evaluation's given and family names of a locale
// ("" for all).
func Names(code string) (first, last []string) {
	for _, l := range locales {
		if code != "" && l.code != code {
			continue
		}
		if l.code == "en-US" {
			n := enNames()
			first = append(first, n[0]...)
			last = append(last, n[1]...)
			continue
		}
		first = append(first, l.first...)
		last = append(last, l.last...)
	}
	return
}

// StreetRoots returns every street name of the evaluation.
func StreetRoots() []string {
	var out []string
	for _, l := range locales {
		out = append(out, l.streetRoots...)
	}
	return out
}

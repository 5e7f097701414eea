"""The protocol presets as they were when studies first got instruments (migration 0014), frozen here so
that a later edit of instruments/presets/ never changes what that migration attached. Not a migration
(the leading underscore keeps Django's loader away)."""

# fmt: off
FROZEN = {
    'protocol_003_radiologist': {
        "fingerprint": 'd576971d6e24750c6ad084b1ebf5a7246b105e73b522cd1ad20a306634202f05',
        "structure_fingerprint": '2a5a080b96913398aaee3e9823c20f2414bd9669bd3b903151cfc61ebc985caa',
        "definition": {'key': 'protocol_003_radiologist',
             'version': 1,
             'title': {'en': 'Two-pronged protocol — radiologist rubric',
                       'es': 'Protocolo de doble vertiente — rúbrica para radiólogos'},
             'citation': {'title': 'Two-Pronged Human Evaluation of ChatGPT Self-Correction in Radiology '
                                   'Report Simplification',
                          'authors': 'Ziyu Yang, Santhosh Cherian, Slobodan Vucetic',
                          'venue': 'Findings of the Association for Computational Linguistics (ACL 2024)',
                          'year': 2024,
                          'section': 'Figure 5 and appendix A.1 (rubric); appendix A.2 (severity levels); '
                                     'section 5.4',
                          'short': 'Yang, Cherian & Vucetic, Findings of ACL 2024'},
             'languages': ['en', 'es'],
             'default_language': 'en',
             'translation_status': {'en': 'source', 'es': 'unvalidated translation'},
             'description': {'en': 'Given an original radiology sentence and different simplifications, you '
                                   'are asked to give a 1-5 Likert scale score for each aspect of each '
                                   'simplification.',
                             'es': 'Dada una frase radiológica original y distintas simplificaciones, se le '
                                   'pide que puntúe cada aspecto de cada simplificación en una escala Likert '
                                   'de 1 a 5.'},
             'items': [{'key': 'severity',
                        'kind': 'ordinal',
                        'applies_to': 'source',
                        'roles': ['radiologist'],
                        'title': {'en': 'Severity', 'es': 'Gravedad'},
                        'wording': {'en': 'What is the severity of the medical condition described in the '
                                          'original sentence?',
                                    'es': '¿Cuál es la gravedad de la afección médica descrita en la frase '
                                          'original?'},
                        'note': "radlay's wording of the question (the paper asks for the severity without a "
                                "sentence of its own); the levels and definitions are appendix A.2's.",
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'Critical', 'es': 'Crítico'},
                                              'definition': {'en': 'Describes a medical condition that poses a '
                                                                   "threat to a person's life. A critical "
                                                                   'condition requires urgent care and close '
                                                                   'monitoring.',
                                                             'es': 'Describe una afección médica que supone '
                                                                   'una amenaza para la vida de una persona. '
                                                                   'Una afección crítica requiere atención '
                                                                   'urgente y una vigilancia estrecha.'}},
                                             {'code': 2,
                                              'label': {'en': 'Serious', 'es': 'Grave'},
                                              'definition': {'en': 'Describes a condition that requires '
                                                                   'medical attention but is not immediately '
                                                                   'life-threatening. Treatment may involve '
                                                                   'hospitalization, medication, or other '
                                                                   'interventions.',
                                                             'es': 'Describe una afección que requiere '
                                                                   'atención médica pero que no pone en '
                                                                   'peligro la vida de forma inmediata. El '
                                                                   'tratamiento puede incluir hospitalización, '
                                                                   'medicación u otras intervenciones.'}},
                                             {'code': 3,
                                              'label': {'en': 'Moderate', 'es': 'Moderado'},
                                              'definition': {'en': 'Describes a condition that is not severe '
                                                                   'but may require medical attention and '
                                                                   'treatment. The condition may cause '
                                                                   "discomfort or affect a person's ability to "
                                                                   'carry out normal activities.',
                                                             'es': 'Describe una afección que no es grave pero '
                                                                   'que puede requerir atención y tratamiento '
                                                                   'médicos. La afección puede causar '
                                                                   'molestias o afectar a la capacidad de una '
                                                                   'persona para realizar sus actividades '
                                                                   'habituales.'}},
                                             {'code': 4,
                                              'label': {'en': 'Mild', 'es': 'Leve'},
                                              'definition': {'en': 'Describes a condition that is not serious. '
                                                                   'The condition may cause minor discomfort '
                                                                   'or inconvenience but is unlikely to have a '
                                                                   "significant impact on a person's overall "
                                                                   'health.',
                                                             'es': 'Describe una afección que no reviste '
                                                                   'gravedad. La afección puede causar '
                                                                   'molestias o inconvenientes menores, pero '
                                                                   'es poco probable que tenga un efecto '
                                                                   'importante en la salud general de una '
                                                                   'persona.'}},
                                             {'code': 5,
                                              'label': {'en': 'Healthy', 'es': 'Sano'},
                                              'definition': {'en': 'Findings that are considered normal or '
                                                                   'benign with no significant abnormalities.',
                                                             'es': 'Hallazgos que se consideran normales o '
                                                                   'benignos, sin anomalías significativas.'}}],
                                  'note': 'Coding Critical = 1 … Healthy = 5 (seed 003 footnote 2 and the '
                                          "release's Severity_ratings file); the appendix numbers them the "
                                          'other way round.'}},
                       {'key': 'original_simplicity',
                        'kind': 'ordinal',
                        'applies_to': 'source',
                        'roles': ['radiologist'],
                        'title': {'en': 'Simplicity', 'es': 'Simplicidad'},
                        'wording': {'en': 'Do you think laypeople can understand the sentence?',
                                    'es': '¿Cree que las personas sin formación médica pueden entender la '
                                          'frase?'},
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'strongly disagree',
                                                        'es': 'totalmente en desacuerdo'}},
                                             {'code': 2, 'label': {'en': 'disagree', 'es': 'en desacuerdo'}},
                                             {'code': 3, 'label': {'en': 'neutral', 'es': 'neutral'}},
                                             {'code': 4, 'label': {'en': 'agree', 'es': 'de acuerdo'}},
                                             {'code': 5,
                                              'label': {'en': 'strongly agree',
                                                        'es': 'totalmente de acuerdo'}}],
                                  'note': "The paper's legend: 1 - strongly disagree, 2 - disagree, 3 - "
                                          'neutral, 4 - agree, 5 - strongly agree.'}},
                       {'key': 'original_comment',
                        'kind': 'free_text',
                        'applies_to': 'source',
                        'roles': ['radiologist'],
                        'wording': {'en': '[Optional] You are asked to provide your optional '
                                          'comments/justifications about your ratings.',
                                    'es': '[Opcional] Puede añadir sus comentarios o justificaciones sobre sus '
                                          'puntuaciones.'},
                        'required': False,
                        'note': "Figure 5's optional-comment note as radlay shows it; PROTOCOL.md lists it in "
                                'a shorter form.',
                        'max_length': 2000},
                       {'key': 'correctness',
                        'kind': 'ordinal',
                        'applies_to': 'simplification',
                        'roles': ['radiologist'],
                        'title': {'en': 'Correctness', 'es': 'Corrección'},
                        'wording': {'en': 'All information in the simplification is medically correct.',
                                    'es': 'Toda la información de la simplificación es médicamente correcta.'},
                        'short_wording': {'en': 'All information is medically correct.',
                                          'es': 'Toda la información es médicamente correcta.'},
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'strongly disagree',
                                                        'es': 'totalmente en desacuerdo'}},
                                             {'code': 2, 'label': {'en': 'disagree', 'es': 'en desacuerdo'}},
                                             {'code': 3, 'label': {'en': 'neutral', 'es': 'neutral'}},
                                             {'code': 4, 'label': {'en': 'agree', 'es': 'de acuerdo'}},
                                             {'code': 5,
                                              'label': {'en': 'strongly agree',
                                                        'es': 'totalmente de acuerdo'}}],
                                  'note': "The paper's legend: 1 - strongly disagree, 2 - disagree, 3 - "
                                          'neutral, 4 - agree, 5 - strongly agree.'}},
                       {'key': 'completeness',
                        'kind': 'ordinal',
                        'applies_to': 'simplification',
                        'roles': ['radiologist'],
                        'title': {'en': 'Completeness', 'es': 'Exhaustividad'},
                        'wording': {'en': 'The simplification must retain all the essential information of the '
                                          'original radiology sentence.',
                                    'es': 'La simplificación debe conservar toda la información esencial de la '
                                          'frase radiológica original.'},
                        'short_wording': {'en': 'It retains all essential information of the original.',
                                          'es': 'Conserva toda la información esencial del original.'},
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'strongly disagree',
                                                        'es': 'totalmente en desacuerdo'}},
                                             {'code': 2, 'label': {'en': 'disagree', 'es': 'en desacuerdo'}},
                                             {'code': 3, 'label': {'en': 'neutral', 'es': 'neutral'}},
                                             {'code': 4, 'label': {'en': 'agree', 'es': 'de acuerdo'}},
                                             {'code': 5,
                                              'label': {'en': 'strongly agree',
                                                        'es': 'totalmente de acuerdo'}}],
                                  'note': "The paper's legend: 1 - strongly disagree, 2 - disagree, 3 - "
                                          'neutral, 4 - agree, 5 - strongly agree.'}},
                       {'key': 'hallucination',
                        'kind': 'ordinal',
                        'applies_to': 'simplification',
                        'roles': ['radiologist'],
                        'title': {'en': 'Hallucination', 'es': 'Alucinación'},
                        'wording': {'en': 'The simplified sentence should not introduce any harmful or '
                                          'misleading interpretations that are not in the original sentence.',
                                    'es': 'La frase simplificada no debe introducir ninguna interpretación '
                                          'perjudicial o engañosa que no esté en la frase original.'},
                        'short_wording': {'en': 'It introduces no harmful or misleading content.',
                                          'es': 'No introduce contenido perjudicial ni engañoso.'},
                        'note': 'Agreeing (5) means no harmful or misleading content; the release calls this '
                                'column "No harm".',
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'strongly disagree',
                                                        'es': 'totalmente en desacuerdo'}},
                                             {'code': 2, 'label': {'en': 'disagree', 'es': 'en desacuerdo'}},
                                             {'code': 3, 'label': {'en': 'neutral', 'es': 'neutral'}},
                                             {'code': 4, 'label': {'en': 'agree', 'es': 'de acuerdo'}},
                                             {'code': 5,
                                              'label': {'en': 'strongly agree',
                                                        'es': 'totalmente de acuerdo'}}],
                                  'note': "The paper's legend: 1 - strongly disagree, 2 - disagree, 3 - "
                                          'neutral, 4 - agree, 5 - strongly agree.'}},
                       {'key': 'structure',
                        'kind': 'ordinal',
                        'applies_to': 'simplification',
                        'roles': ['radiologist'],
                        'title': {'en': 'Structure', 'es': 'Estructura'},
                        'wording': {'en': 'The simplification must include clear descriptions of 1) body '
                                          'parts, 2) the findings (such as masses, injuries, stones, '
                                          'swelling), and 3) what these findings indicate (for instance, '
                                          'benign conditions, unclear diagnoses, indications of severity).',
                                    'es': 'La simplificación debe incluir descripciones claras de 1) las '
                                          'partes del cuerpo, 2) los hallazgos (como masas, lesiones, '
                                          'cálculos, hinchazón) y 3) lo que indican esos hallazgos (por '
                                          'ejemplo, afecciones benignas, diagnósticos poco claros, indicios de '
                                          'gravedad).'},
                        'short_wording': {'en': 'It clearly describes the body parts, the findings and what '
                                                'they indicate.',
                                          'es': 'Describe con claridad las partes del cuerpo, los hallazgos y '
                                                'lo que indican.'},
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'strongly disagree',
                                                        'es': 'totalmente en desacuerdo'}},
                                             {'code': 2, 'label': {'en': 'disagree', 'es': 'en desacuerdo'}},
                                             {'code': 3, 'label': {'en': 'neutral', 'es': 'neutral'}},
                                             {'code': 4, 'label': {'en': 'agree', 'es': 'de acuerdo'}},
                                             {'code': 5,
                                              'label': {'en': 'strongly agree',
                                                        'es': 'totalmente de acuerdo'}}],
                                  'note': "The paper's legend: 1 - strongly disagree, 2 - disagree, 3 - "
                                          'neutral, 4 - agree, 5 - strongly agree.'}},
                       {'key': 'simplicity',
                        'kind': 'ordinal',
                        'applies_to': 'simplification',
                        'roles': ['radiologist'],
                        'title': {'en': 'Simplicity', 'es': 'Simplicidad'},
                        'wording': {'en': 'From your personal perspective, the simplification is simple enough '
                                          'for laypeople to understand.',
                                    'es': 'Desde su punto de vista personal, la simplificación es lo bastante '
                                          'sencilla como para que la entiendan personas sin formación médica.'},
                        'short_wording': {'en': 'It is simple enough for laypeople to understand.',
                                          'es': 'Es lo bastante sencilla como para que la entiendan personas '
                                                'sin formación médica.'},
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'strongly disagree',
                                                        'es': 'totalmente en desacuerdo'}},
                                             {'code': 2, 'label': {'en': 'disagree', 'es': 'en desacuerdo'}},
                                             {'code': 3, 'label': {'en': 'neutral', 'es': 'neutral'}},
                                             {'code': 4, 'label': {'en': 'agree', 'es': 'de acuerdo'}},
                                             {'code': 5,
                                              'label': {'en': 'strongly agree',
                                                        'es': 'totalmente de acuerdo'}}],
                                  'note': "The paper's legend: 1 - strongly disagree, 2 - disagree, 3 - "
                                          'neutral, 4 - agree, 5 - strongly agree.'}},
                       {'key': 'comment',
                        'kind': 'free_text',
                        'applies_to': 'simplification',
                        'roles': ['radiologist'],
                        'wording': {'en': '[Optional] You are asked to provide your optional '
                                          'comments/justifications about your ratings.',
                                    'es': '[Opcional] Puede añadir sus comentarios o justificaciones sobre sus '
                                          'puntuaciones.'},
                        'required': False,
                        'note': "Figure 5's optional-comment note as radlay shows it; PROTOCOL.md lists it in "
                                'a shorter form.',
                        'max_length': 2000}]},
    },
    'protocol_003_layperson': {
        "fingerprint": '1d9495aa2094c9f0bdb5ea768aa1c3c9681476bb43e6caf4ee19ee95282c4cd4',
        "structure_fingerprint": '7709e097022f864f6205e2a52ed1e26aa7fb8e346632cbae9b9f5ed302e18856',
        "definition": {'key': 'protocol_003_layperson',
             'version': 1,
             'title': {'en': 'Two-pronged protocol — layperson survey',
                       'es': 'Protocolo de doble vertiente — encuesta para personas sin formación médica'},
             'citation': {'title': 'Two-Pronged Human Evaluation of ChatGPT Self-Correction in Radiology '
                                   'Report Simplification',
                          'authors': 'Ziyu Yang, Santhosh Cherian, Slobodan Vucetic',
                          'venue': 'Findings of the Association for Computational Linguistics (ACL 2024)',
                          'year': 2024,
                          'section': 'Figure 1 (layperson survey); appendix A.2 (severity levels); section 5.4',
                          'short': 'Yang, Cherian & Vucetic, Findings of ACL 2024',
                          'note': "Option wording is what the participants saw (the release's raw survey "
                                  "exports), slightly longer than the paper's figure."},
             'languages': ['en', 'es'],
             'default_language': 'en',
             'translation_status': {'en': 'source', 'es': 'unvalidated translation'},
             'phases': [{'key': 'original',
                         'intro': {'en': 'Given a radiology sentence, please answer the following questions.',
                                   'es': 'Dada una frase de un informe de radiología, responda a las '
                                         'siguientes preguntas.'}},
                        {'key': 'assisted',
                         'intro': {'en': 'Given the same radiology sentence and a simplification, please '
                                         'answer the following questions.',
                                   'es': 'Dada la misma frase de radiología y una simplificación, responda a '
                                         'las siguientes preguntas.'}},
                        {'key': 'preference',
                         'intro': {'en': 'Given all simplifications, please answer the following questions.',
                                   'es': 'Dadas todas las simplificaciones, responda a las siguientes '
                                         'preguntas.'}}],
             'items': [{'key': 'understanding',
                        'kind': 'ordinal',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'number': 'Q1',
                        'phases': ['original', 'assisted'],
                        'wording': {'en': 'You understand the meaning of the sentence.',
                                    'es': 'Usted entiende el significado de la frase.'},
                        'scale': {'points': [{'code': 1, 'label': {'en': 'Not at all', 'es': 'En absoluto'}},
                                             {'code': 2,
                                              'label': {'en': 'Some parts of it', 'es': 'Algunas partes'}},
                                             {'code': 3, 'label': {'en': 'Most of it', 'es': 'La mayor parte'}},
                                             {'code': 4,
                                              'label': {'en': 'Completely', 'es': 'Completamente'}}]}},
                       {'key': 'confidence',
                        'kind': 'ordinal',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'number': 'Q2',
                        'phases': ['original', 'assisted'],
                        'wording': {'en': 'Can you guess the level of severity of the medical condition '
                                          'described in the sentence?',
                                    'es': '¿Puede adivinar el nivel de gravedad de la afección médica descrita '
                                          'en la frase?'},
                        'scale': {'points': [{'code': 1, 'label': {'en': 'Not at all', 'es': 'En absoluto'}},
                                             {'code': 2,
                                              'label': {'en': 'With low confidence',
                                                        'es': 'Con poca seguridad'}},
                                             {'code': 3,
                                              'label': {'en': 'With high confidence',
                                                        'es': 'Con mucha seguridad'}}]}},
                       {'key': 'urgency_confidence',
                        'kind': 'ordinal',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'number': 'Q2b',
                        'phases': ['original', 'assisted'],
                        'wording': {'en': 'Can you guess the medical urgency of the condition described in the '
                                          'sentence?',
                                    'es': '¿Puede adivinar la urgencia médica de la afección descrita en la '
                                          'frase?'},
                        'required': False,
                        'note': 'Asked in the real survey (a study\'s "ask urgency" option), not in the '
                                "paper's tables.",
                        'scale': {'points': [{'code': 1, 'label': {'en': 'Not at all', 'es': 'En absoluto'}},
                                             {'code': 2,
                                              'label': {'en': 'With low confidence',
                                                        'es': 'Con poca seguridad'}},
                                             {'code': 3,
                                              'label': {'en': 'With high confidence',
                                                        'es': 'Con mucha seguridad'}}]}},
                       {'key': 'severity_guess',
                        'kind': 'ordinal',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'number': 'Q3',
                        'phases': ['original', 'assisted'],
                        'wording': {'en': 'Make your best guess about the severity of the described medical '
                                          'condition.',
                                    'es': 'Haga su mejor estimación de la gravedad de la afección médica '
                                          'descrita.'},
                        'scale': {'points': [{'code': 1,
                                              'label': {'en': 'Critical', 'es': 'Crítico'},
                                              'definition': {'en': 'Describes a medical condition that poses a '
                                                                   "threat to a person's life. A critical "
                                                                   'condition requires urgent care and close '
                                                                   'monitoring.',
                                                             'es': 'Describe una afección médica que supone '
                                                                   'una amenaza para la vida de una persona. '
                                                                   'Una afección crítica requiere atención '
                                                                   'urgente y una vigilancia estrecha.'}},
                                             {'code': 2,
                                              'label': {'en': 'Serious', 'es': 'Grave'},
                                              'definition': {'en': 'Describes a condition that requires '
                                                                   'medical attention but is not immediately '
                                                                   'life-threatening. Treatment may involve '
                                                                   'hospitalization, medication, or other '
                                                                   'interventions.',
                                                             'es': 'Describe una afección que requiere '
                                                                   'atención médica pero que no pone en '
                                                                   'peligro la vida de forma inmediata. El '
                                                                   'tratamiento puede incluir hospitalización, '
                                                                   'medicación u otras intervenciones.'}},
                                             {'code': 3,
                                              'label': {'en': 'Moderate', 'es': 'Moderado'},
                                              'definition': {'en': 'Describes a condition that is not severe '
                                                                   'but may require medical attention and '
                                                                   'treatment. The condition may cause '
                                                                   "discomfort or affect a person's ability to "
                                                                   'carry out normal activities.',
                                                             'es': 'Describe una afección que no es grave pero '
                                                                   'que puede requerir atención y tratamiento '
                                                                   'médicos. La afección puede causar '
                                                                   'molestias o afectar a la capacidad de una '
                                                                   'persona para realizar sus actividades '
                                                                   'habituales.'}},
                                             {'code': 4,
                                              'label': {'en': 'Mild', 'es': 'Leve'},
                                              'definition': {'en': 'Describes a condition that is not serious. '
                                                                   'The condition may cause minor discomfort '
                                                                   'or inconvenience but is unlikely to have a '
                                                                   "significant impact on a person's overall "
                                                                   'health.',
                                                             'es': 'Describe una afección que no reviste '
                                                                   'gravedad. La afección puede causar '
                                                                   'molestias o inconvenientes menores, pero '
                                                                   'es poco probable que tenga un efecto '
                                                                   'importante en la salud general de una '
                                                                   'persona.'}},
                                             {'code': 5,
                                              'label': {'en': 'Healthy', 'es': 'Sano'},
                                              'definition': {'en': 'Findings that are considered normal or '
                                                                   'benign with no significant abnormalities.',
                                                             'es': 'Hallazgos que se consideran normales o '
                                                                   'benignos, sin anomalías significativas.'}}],
                                  'note': 'Coding Critical = 1 … Healthy = 5 (seed 003 footnote 2 and the '
                                          "release's Severity_ratings file); the appendix numbers them the "
                                          'other way round.'}},
                       {'key': 'helpfulness',
                        'kind': 'ordinal',
                        'applies_to': 'simplification',
                        'roles': ['layperson'],
                        'number': 'Q4',
                        'phases': ['assisted'],
                        'wording': {'en': 'Has the simplified sentence improved your understanding of the '
                                          'original sentence?',
                                    'es': '¿La frase simplificada ha mejorado su comprensión de la frase '
                                          'original?'},
                        'scale': {'points': [{'code': -1,
                                              'label': {'en': 'It further confused me',
                                                        'es': 'Me confundió aún más'}},
                                             {'code': 0,
                                              'label': {'en': 'It did not help', 'es': 'No me ayudó'}},
                                             {'code': 1,
                                              'label': {'en': 'I understand slightly better',
                                                        'es': 'La entiendo un poco mejor'}},
                                             {'code': 2,
                                              'label': {'en': 'I understand much better',
                                                        'es': 'La entiendo mucho mejor'}}]}},
                       {'key': 'most',
                        'kind': 'multiple_choice',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'number': 'Q5',
                        'phases': ['preference'],
                        'wording': {'en': 'Which simplifications do you like the most? (you can select more '
                                          'than one sentence)',
                                    'es': '¿Qué simplificaciones le gustan más? (puede seleccionar más de una '
                                          'frase)'},
                        'options_from': 'texts',
                        'exclusive_with': 'least'},
                       {'key': 'most_justification',
                        'kind': 'free_text',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'phases': ['preference'],
                        'wording': {'en': 'Please provide your justification.',
                                    'es': 'Por favor, justifique su respuesta.'},
                        'required': False,
                        'max_length': 2000},
                       {'key': 'least',
                        'kind': 'multiple_choice',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'number': 'Q6',
                        'phases': ['preference'],
                        'wording': {'en': 'Which simplifications do you like the least? (you can select more '
                                          'than one sentence)',
                                    'es': '¿Qué simplificaciones le gustan menos? (puede seleccionar más de '
                                          'una frase)'},
                        'options_from': 'texts',
                        'exclusive_with': 'most'},
                       {'key': 'least_justification',
                        'kind': 'free_text',
                        'applies_to': 'source',
                        'roles': ['layperson'],
                        'phases': ['preference'],
                        'wording': {'en': 'Please provide your justification.',
                                    'es': 'Por favor, justifique su respuesta.'},
                        'required': False,
                        'max_length': 2000}]},
    },
}

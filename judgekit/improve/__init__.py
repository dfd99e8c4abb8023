"""`judgekit improve`: proposals made on the dev split (proposals), measured there and the best
tested once on the test split (search), within the test split's alpha budget
(judgekit.watch.alpha_budget), and what is written (render)."""
